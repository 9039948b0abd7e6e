"""Ray Tune adapter: the trainable, searcher, Tuner and budget (`adapter`), the Ray cluster
(`cluster`), trial configs and names (`points`) and the one reader of Tune's saved state
(`state`). Nothing here imports `raystudy.study`."""
