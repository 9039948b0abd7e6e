"""Ray Tune adapter: the searcher and Tuner (`adapter`), the trainable a trial runs
(`trainable`), the Optuna study in its storage (`optuna_storage`), the time budget and the stop
on a full disk (`stopping`), the Ray cluster (`cluster`), trial configs and names (`points`)
and the one reader of Tune's saved state (`state`). Nothing here imports `raystudy.study`."""
