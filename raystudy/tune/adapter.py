"""The Ray Tune adapter: a validated spec -> a Tuner over its trials.

The searcher (grid, or Optuna with `FinalMetricOptunaSearch` and its storage,
`raystudy.tune.optuna_storage`), the ASHA scheduler and the run config (Tune's storage in
`<study>/tune/`, retries, checkpoints, the progress and state-backup callbacks) are set up here
around the trainable (`raystudy.tune.trainable`); the time budget is kept by
`raystudy.tune.stopping`. The study driver calls this; nothing here knows the study folder
beyond the path it is given.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ray.tune.search.optuna import OptunaSearch

from raystudy.spec import StudySpec
from raystudy.spec.search_space import define_by_run
from raystudy.trials.common import StudyContext
from raystudy.tune.optuna_storage import clear_optuna_study, optuna_storage_url
from raystudy.tune.points import LABELS_FILE, POINT, STACK, stack_labels, trial_labels, write_labels
from raystudy.tune.progress import ProgressCallback
from raystudy.tune.state import TUNE_DIR
from raystudy.tune.state_backup import StateBackupCallback
from raystudy.tune.stopping import budget_by_signal
from raystudy.tune.trainable import make_trainable


# Kept in this module: a study's tuner.pkl holds its searcher pickled by this class's path, so
# a study saved before could not be resumed if the class moved.
class FinalMetricOptunaSearch(OptunaSearch):
    """OptunaSearch that reports a trial's intermediate values only when they exist.

    Trials report `train/*` while training and the searched metric (`dis/*`, `transfer/*`)
    once, at the end; stock OptunaSearch indexes every result by the metric and fails.

    A driver killed between telling Optuna a trial's value and saving its own state leaves
    a searcher that, restored, would tell (or report to) the finished Optuna trial again,
    which Optuna refuses and Tune turns into a failed study: such a trial is taken as told.
    """

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if isinstance(self.metric, str) and self.metric not in result:
            return
        if self._told_already(trial_id):
            return
        super().on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        if self._told_already(trial_id):
            return
        super().on_trial_complete(trial_id, result, error)

    def _told_already(self, trial_id: str) -> bool:
        """Whether the storage holds this trial's Optuna trial as finished (the searcher's
        own record of it may be older than the storage's)."""
        ot_trial = getattr(self, "_ot_trials", {}).get(trial_id)
        if ot_trial is None or trial_id in self._completed_trials:
            return False
        frozen = self._ot_study._storage.get_trial(ot_trial._trial_id)
        if not frozen.state.is_finished():
            return False
        self._completed_trials.add(trial_id)
        return True


def make_searcher(
    spec: StudySpec, study_dir: Path, overwrite: bool = False
) -> tuple[Any, Any, dict[str, Any]]:
    """(search_alg, scheduler, TuneConfig metric/mode) for the spec's search method; with
    `overwrite`, an Optuna study of the same name in the storage is deleted first."""
    from ray.tune.schedulers import ASHAScheduler

    search = spec.search
    scheduler = None
    if search.asha is not None:
        a = search.asha
        scheduler = ASHAScheduler(
            metric=a.metric,
            mode=a.mode,
            grace_period=a.grace_period,
            reduction_factor=a.reduction_factor,
            max_t=a.max_t,
        )
    if search.method != "optuna":
        return None, scheduler, {}
    import optuna

    from raystudy.tune.samplers import PicklableNSGAIISampler

    samplers = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=search.seed),
        "nsga2": lambda: PicklableNSGAIISampler(seed=search.seed),
        "random": lambda: optuna.samplers.RandomSampler(seed=search.seed),
    }
    storage_url = optuna_storage_url(spec, study_dir)
    if overwrite:
        clear_optuna_study(storage_url, spec.name)
    searcher = FinalMetricOptunaSearch(
        space=functools.partial(define_by_run, space=search.space),
        metric=search.metric,
        mode=search.mode,
        sampler=samplers[search.sampler](),
        study_name=spec.name,
        storage=optuna.storages.RDBStorage(storage_url),
    )
    return searcher, scheduler, {}


def new_tuner(
    spec: StudySpec,
    study_dir: Path,
    context: StudyContext,
    verbose: int = 1,
    overwrite: bool = False,
) -> Any:
    """The Tuner of a new study (a resumed one is rebuilt by `raystudy.tune.restore`)."""
    from ray import tune

    points = spec.points()
    search_alg, scheduler, target = make_searcher(spec, study_dir, overwrite)
    if spec.execution.seeds_per_trial > 1:
        labels, key = stack_labels(points, spec.stacks(), spec.execution.stack_over), STACK
    else:
        labels, key = trial_labels(points), POINT
    name_fn = write_labels(study_dir / LABELS_FILE, labels)
    if spec.search.method == "optuna":
        param_space: dict[str, Any] = {}
        num_samples = spec.search.num_samples
    else:
        param_space = {key: tune.grid_search(list(range(len(labels))))}
        num_samples = 1
    return tune.Tuner(
        make_trainable(spec, context),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            search_alg=search_alg,
            scheduler=scheduler,
            num_samples=num_samples,
            max_concurrent_trials=spec.execution.max_concurrent_trials,
            # Ended by `time_budget` where it can be, so that resume continues the trials.
            time_budget_s=None if budget_by_signal() else spec.execution.time_budget_s,
            reuse_actors=True,
            trial_name_creator=name_fn,
            trial_dirname_creator=name_fn,
            **target,
        ),
        run_config=run_config(spec, study_dir, verbose),
    )


def run_config(spec: StudySpec, study_dir: Path, verbose: int = 1) -> Any:
    from ray import tune

    return tune.RunConfig(
        name=TUNE_DIR,
        storage_path=str(study_dir),
        failure_config=tune.FailureConfig(max_failures=spec.execution.max_failures),
        checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        verbose=verbose,
        callbacks=[progress_callback(spec), StateBackupCallback(str(study_dir / TUNE_DIR))],
    )


def progress_callback(spec: StudySpec) -> ProgressCallback:
    """The display's ears in Tune's loop, following the search's (first) metric."""
    return ProgressCallback(*spec.search.first_target())


def with_progress(tuner: Any, spec: StudySpec, tune_dir: Path) -> Any:
    """A restored Tuner with the progress callback, and the state backup of its folder as it
    is now (a moved study saved the old one): a study started before raystudy had them saved
    its RunConfig without them. Tune has no public way to change a restored RunConfig;
    through Ray Client (`ray://`) the Tuner lives on the cluster and is left as it is."""
    local = getattr(tuner, "_local_tuner", None)
    if local is None:
        return tuner
    config = local.get_run_config()
    callbacks = [c for c in config.callbacks or [] if not isinstance(c, StateBackupCallback)]
    if not any(isinstance(c, ProgressCallback) for c in callbacks):
        callbacks.append(progress_callback(spec))
    config.callbacks = [*callbacks, StateBackupCallback(str(tune_dir))]
    return tuner
