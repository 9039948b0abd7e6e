"""The Ray Tune adapter: a validated spec -> a Tuner over its trials, and what runs inside one.

The trainable (`_trainable`) turns a Tune trial's config into the model(s) it trains and runs
them with a `TuneReporter` (results and checkpoints to Tune); the searcher (grid, or Optuna
with `FinalMetricOptunaSearch` and its storage), the ASHA scheduler, the run config (Tune's
storage in `<study>/tune/`, retries, checkpoints) and the time budget (`time_budget`, which
ends the run as Ctrl-C does so that `resume` continues it) are set up here. The study driver
calls this; nothing here knows the study folder beyond the path it is given.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from ray.tune.search.optuna import OptunaSearch

from raystudy.spec import StudySpec, TrialConfig, deep_merge
from raystudy.spec.search_space import define_by_run
from raystudy.trials.common import StudyContext
from raystudy.trials.single import run_trial
from raystudy.tune.checkpoints import CHECKPOINT_FILE, load_state, restore_state
from raystudy.tune.cluster import TuneSetupError
from raystudy.tune.points import (
    LABELS_FILE,
    POINT,
    STACK,
    stack_labels,
    trial_config,
    trial_labels,
    write_labels,
)
from raystudy.tune.progress import FullDiskWatch, ProgressCallback, watching_for_full_disk
from raystudy.tune.state import TUNE_DIR
from raystudy.tune.state_backup import StateBackupCallback


class TuneReporter:
    """Forwards a trial's results to Tune; a state becomes a Tune checkpoint. `fallback`
    says, after `restore`, when the newest checkpoint was unreadable and an older one was
    read instead (the trial tags its run with it)."""

    def __init__(self) -> None:
        self.fallback: str | None = None

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        from ray import tune

        if state is None:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(state, Path(tmp) / CHECKPOINT_FILE)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(tmp))

    def restore(self) -> dict[str, Any] | None:
        from ray import tune

        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            return None
        folder = Path(checkpoint.path)
        # On local (or shared) storage the older kept checkpoint lies beside the newest.
        if type(checkpoint.filesystem).__name__ == "LocalFileSystem" and folder.is_dir():
            state, self.fallback = restore_state(folder)
            return state
        with checkpoint.as_directory() as tmp:
            return load_state(Path(tmp))


def _trainable(
    config: dict[str, Any],
    *,
    base: dict[str, Any],
    points: list[dict[str, Any]],
    context: StudyContext,
    stacks: list[list[int]] | None = None,
    labels: list[str] | None = None,
) -> None:
    """One Tune trial: resolve its config (a fixed point, an Optuna draw, or a stack of
    points that differ only in seed, `config["stack"]` indexing `stacks`) and run it."""
    import ray
    from ray import tune

    members = stacks[config[STACK]] if STACK in config and stacks is not None else None
    config_ = trial_config(base, points, config) if members is None else None
    if context.gpu and torch.cuda.is_available():
        # Ray shares a GPU between fractional trials but does not isolate their memory: cap
        # each at its share so co-located trials cannot starve one another.
        torch.cuda.set_per_process_memory_fraction(min(1.0, context.gpu))
    tune_context = tune.get_context()
    ctx = context.trial(
        trial_id=tune_context.get_trial_id(),
        trial_name=tune_context.get_trial_name(),
        node=ray.get_runtime_context().get_node_id(),
        gpu_ids=",".join(str(g) for g in ray.get_gpu_ids()),
    )
    if config_ is not None:
        run_trial(config_, ctx, TuneReporter())
        return
    from raystudy.trials.stacked import run_seed_stack

    assert members is not None and labels is not None
    configs = [TrialConfig.model_validate(deep_merge(base, points[j])) for j in members]
    run_seed_stack(configs, ctx, TuneReporter(), [labels[j] for j in members])


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


def optuna_storage_url(spec: StudySpec, study_dir: Path) -> str:
    """Where the study's Optuna study lives: `search.storage`, or optuna.db in its folder."""
    return spec.search.storage or f"sqlite:///{study_dir / 'optuna.db'}"


def optuna_study_exists(url: str, name: str) -> bool:
    """Whether the Optuna storage at `url` holds a study `name`; a sqlite file that does not
    exist holds none (and is not created here)."""
    import optuna
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
        return False
    try:
        return name in optuna.study.get_all_study_names(storage=url)
    except Exception as exc:  # an unreachable server, a file that is no Optuna database
        raise TuneSetupError(
            f"search.storage {url}: cannot read the Optuna storage ({type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:300]})"
        ) from None


def close_orphan_optuna_trials(url: str, name: str) -> int:
    """Fail the trials of Optuna study `name` still RUNNING once every Tune trial has ended:
    asked for a Tune trial that a killed driver never recorded (the resumed study draws a
    new one), they would otherwise look pending for ever. Returns how many were closed."""
    import optuna

    if not optuna_study_exists(url, name):
        return 0
    study = optuna.load_study(study_name=name, storage=url)
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in running:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return len(running)


def clear_optuna_study(url: str, name: str) -> bool:
    """Delete the Optuna study `name` from the storage at `url` (--overwrite: the study
    starts afresh); returns whether there was one."""
    import optuna

    if not optuna_study_exists(url, name):
        return False
    try:
        optuna.delete_study(study_name=name, storage=url)
    except KeyError:  # gone meanwhile
        return False
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


def make_trainable(spec: StudySpec, context: StudyContext) -> Any:
    """The spec's trainable, with the study's context and the resources each trial asks for."""
    from ray import tune

    return tune.with_resources(
        tune.with_parameters(
            _trainable,
            base=spec.base(),
            points=spec.points(),
            context=context,
            **_stacking(spec),
        ),
        context.resources,
    )


def _stacking(spec: StudySpec) -> dict[str, Any]:
    """What a trainable needs to run stacks of seeds (nothing when seeds_per_trial is 1)."""
    if spec.execution.seeds_per_trial == 1:
        return {}
    return {"stacks": spec.stacks(), "labels": trial_labels(spec.points())}


#: Tune ends a run on this signal as on Ctrl-C (`ray.tune.tune._setup_signal_catching`).
_TUNE_STOP_SIGNAL = getattr(signal, "SIGUSR1", None)


def budget_by_signal() -> bool:
    """Whether `time_budget` can end the study as Ctrl-C does (Tune catches signals only
    when it runs in the main thread); if not, Tune's own time budget is used."""
    return _TUNE_STOP_SIGNAL is not None and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """End the Tune run inside after `seconds` as Ctrl-C does: Tune saves the study with its
    running trials unfinished, and `resume` continues them from their checkpoints. Tune's own
    `time_budget_s` marks them TERMINATED instead, which a resume skips as finished.

    The signal is sent once Tune's handler is in place, and again every few seconds until the
    run ends (a handler left by an earlier run in the process would swallow the first one).
    """
    if seconds is None or not budget_by_signal():
        yield
        return
    over = threading.Event()

    def stop() -> None:
        if not over.wait(seconds):
            _signal_until(over)

    with _running(stop, "raystudy-time-budget", over):
        yield


@contextlib.contextmanager
def stop_on_full_disk() -> Iterator[FullDiskWatch]:
    """End the Tune run inside as Ctrl-C does once a trial fails for a full disk: every trial
    after it would fail too. The returned watch names that trial (its `failure`); Tune saves
    what it can, and `resume` continues once there is space."""
    with watching_for_full_disk() as watch:
        if not budget_by_signal():  # the trials fail one by one; the driver still says why
            yield watch
            return
        over = threading.Event()

        def stop() -> None:
            while not over.is_set():
                if watch.seen.wait(0.5):
                    _signal_until(over)
                    return

        with _running(stop, "raystudy-full-disk", over):
            yield watch


def _signal_until(over: threading.Event) -> None:
    """Send Tune's stop signal once its handler is in place, and again every few seconds
    until `over` (a handler left by an earlier run in the process would swallow the first)."""
    while not over.is_set():
        if signal.getsignal(_TUNE_STOP_SIGNAL) not in (signal.SIG_DFL, signal.SIG_IGN, None):
            signal.raise_signal(_TUNE_STOP_SIGNAL)
        over.wait(2.0)


@contextlib.contextmanager
def _running(target: Callable[[], None], name: str, over: threading.Event) -> Iterator[None]:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        over.set()
        thread.join()
