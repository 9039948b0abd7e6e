"""The only module that knows Ray Tune: a validated spec -> a Tuner over its grid, and its run.

Everything a study writes lives under `<output>/<name>/`: Tune's state (`tune/`), the MLflow
store (`mlflow.db`, `mlartifacts/`) unless the spec names another, the resolved spec and
`study.json`, which tells `analyze` (and a later `resume`) where the results are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from ray.tune.search.optuna import OptunaSearch

import raystudy
from raystudy.resources import ResourceError, cluster_request
from raystudy.search import define_by_run
from raystudy.spec import (
    ALLOWED_TRACKING_URIS,
    StudySpec,
    TrialConfig,
    deep_merge,
    flatten,
    varying,
)
from raystudy.tags import STOPPED_TAG, VERSION_TAG
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable
from raystudy.tracking.writer import StudyTracker, default_uri, sync_run
from raystudy.trial import EVALUATED, TrialContext, run_trial

STUDY_FILE = "study.json"
TUNE_DIR = "tune"
CHECKPOINT_FILE = "state.pt"

# What became of a Tune trial, as `run`, `resume` and `status` count it. FINISHED trials
# reported their final scores; STOPPED ones were stopped on purpose by the scheduler (ASHA)
# before them: they are done, pruned in Optuna, and never resumed. UNFINISHED ones were
# cut short otherwise (Ctrl-C, a time budget): what `resume` continues.
FINISHED = "TERMINATED"
STOPPED = "STOPPED"
UNFINISHED = "UNFINISHED"
#: The value of `STOPPED_TAG` on the MLflow runs of trials the scheduler stopped: ASHA is the
#: only scheduler a spec can name (a trial that returns has always reported its scores).
STOPPED_BY = "asha"
#: Tune's flag on a trial's last result when a scheduler or stopper ended it (and on the
#: last result of a trial whose function returned).
_DONE = "done"


class StudyError(RuntimeError):
    """A study that cannot start (or finish); the message says why and what to do."""


@dataclass(frozen=True)
class StudyInfo:
    """What `study.json` records: enough to find a study's results again."""

    name: str
    study_dir: Path
    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    #: Tune trials (what `status` counts); with seeds_per_trial each trains several models.
    num_trials: int
    #: Models, i.e. MLflow trial runs; None in studies written before it existed: num_trials.
    num_models: int | None = None

    @property
    def models(self) -> int:
        return self.num_trials if self.num_models is None else self.num_models

    def write(self) -> None:
        data = {**self.__dict__, "study_dir": str(self.study_dir)}
        # Rewritten while `status`/`analyze` may read it: a reader must never see half a file.
        path = self.study_dir / STUDY_FILE
        partial = path.with_name(f".{STUDY_FILE}.partial-{os.getpid()}")
        partial.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(partial, path)

    @classmethod
    def read(cls, study_dir: Path) -> StudyInfo:
        path = study_dir / STUDY_FILE
        if not path.is_file():
            raise StudyError(
                f"{study_dir} is not a raystudy study (no {STUDY_FILE}); "
                f"`raystudy run SPEC --output {study_dir.parent}` creates one"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StudyError(
                f"{path}: the file is not valid JSON ({exc.msg}, line {exc.lineno} column "
                f"{exc.colno}); it records where the study's results are: restore it, or run "
                "the study again with --overwrite"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StudyError(f"{path}: cannot read the file ({exc})") from None
        if not isinstance(data, dict):
            raise StudyError(
                f"{path}: must hold a JSON object with the fields {', '.join(_INFO_TYPES)}, "
                f"got a JSON {type(data).__name__}"
            )
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.name not in data
        ]
        if required:
            raise StudyError(
                f"{path}: lacks {', '.join(required)}; it was not written by raystudy (or was "
                "cut short): restore it, or run the study again with --overwrite"
            )
        for key, (kinds, what) in _INFO_TYPES.items():
            value = data.get(key)
            # bool is an int to Python, never a count to a study.
            if key in data and (not isinstance(value, kinds) or isinstance(value, bool)):
                raise StudyError(f"{path}: {key} must be {what}, got {value!r}")
        # Keys this version does not know are left out, not refused: study.json has gained
        # fields before (num_models), and a study written by a newer raystudy should still be
        # readable here; everything this version needs was checked above.
        known = {k: data[k] for k in _INFO_TYPES if k in data}
        return cls(**{**known, "study_dir": Path(data["study_dir"])})


#: study.json's fields: the JSON types each may have, and how a message names them.
_INFO_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "study_dir": ((str,), "a string (a folder)"),
    "tracking_uri": ((str,), "a string (an MLflow tracking URI)"),
    "experiment_id": ((str,), "a string (an MLflow experiment id)"),
    "parent_run_id": ((str,), "a string (an MLflow run id)"),
    "num_trials": ((int,), "an integer"),
    "num_models": ((int, type(None)), "an integer or null"),
}


@dataclass(frozen=True)
class StudyOutcome:
    info: StudyInfo
    states: dict[str, int]
    wall_s: float
    #: Set when the tracking store could not be reached at the end: finished trials whose
    #: runs it lacks are then only in Tune's storage (`raystudy resume` logs them).
    tracking_error: str | None = None
    #: Finished trials whose MLflow runs were completed from Tune's storage at the end.
    synced: int = 0

    @property
    def ok(self) -> bool:
        """Every trial is done: finished, or stopped on purpose by the scheduler."""
        return self.done == self.info.num_trials

    @property
    def done(self) -> int:
        return self.states.get(FINISHED, 0) + self.states.get(STOPPED, 0)


class TuneReporter:
    """Forwards a trial's results to Tune; a state becomes a Tune checkpoint."""

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
        with checkpoint.as_directory() as tmp:
            return torch.load(Path(tmp) / CHECKPOINT_FILE, map_location="cpu", weights_only=True)


def _trainable(
    config: dict[str, Any],
    *,
    base: dict[str, Any],
    points: list[dict[str, Any]],
    context: dict[str, Any],
    stacks: list[list[int]] | None = None,
    labels: list[str] | None = None,
) -> None:
    """One Tune trial: resolve its config (a fixed point, an Optuna draw, or a stack of
    points that differ only in seed, `config["stack"]` indexing `stacks`) and run it."""
    import ray
    from ray import tune

    members = stacks[config["stack"]] if "stack" in config and stacks is not None else None
    config_ = trial_config(base, points, config) if members is None else None
    gpu = context.pop("gpu", 0.0)
    if gpu and torch.cuda.is_available():
        # Ray shares a GPU between fractional trials but does not isolate their memory: cap
        # each at its share so co-located trials cannot starve one another.
        torch.cuda.set_per_process_memory_fraction(min(1.0, gpu))
    tune_context = tune.get_context()
    ctx = TrialContext(
        trial_id=tune_context.get_trial_id(),
        trial_name=tune_context.get_trial_name(),
        node=ray.get_runtime_context().get_node_id(),
        gpu_ids=",".join(str(g) for g in ray.get_gpu_ids()),
        **context,
    )
    if config_ is not None:
        run_trial(config_, ctx, TuneReporter())
        return
    from raystudy.trial_stack import run_seed_stack

    assert members is not None and labels is not None
    configs = [TrialConfig.model_validate(deep_merge(base, points[j])) for j in members]
    run_seed_stack(configs, ctx, TuneReporter(), [labels[j] for j in members])


def trial_config(
    base: dict[str, Any], points: list[dict[str, Any]], config: dict[str, Any]
) -> TrialConfig:
    """The trial config of a Tune trial's `config`: a grid point by index, or an Optuna draw."""
    override = points[config["point"]] if "point" in config else config["override"]
    return TrialConfig.model_validate(deep_merge(base, override))


def trial_labels(points: list[dict[str, Any]]) -> list[str]:
    """Short names from the values that vary across points, e.g. `003_ada_gvae_beta=4`."""
    keys = varying(points)
    labels = []
    for i, point in enumerate(points):
        flat = flatten(point)
        parts = [
            str(flat[k]) if k.endswith("objective") else f"{k.rsplit('.', 1)[-1]}={flat[k]}"
            for k in keys
            if k in flat
        ]
        text = re.sub(r"[^A-Za-z0-9_.=-]+", "-", "_".join(parts))[:80]
        labels.append(f"{i:03d}_{text}" if text else f"{i:03d}")
    return labels


def stack_labels(
    points: list[dict[str, Any]], stacks: list[list[int]], stack_over: Sequence[str] = ()
) -> list[str]:
    """Names of stacked trials: the label of what the models share, then what tells them
    apart: `..._seeds=0-1`, or with `stack_over` `..._beta=1,seed=0+beta=4,seed=0`."""
    apart = {"seed", *stack_over}
    flat = [flatten(p) for p in points]
    shared = [{k: v for k, v in flat[g[0]].items() if k not in apart} for g in stacks]
    labels = []
    for label, g in zip(trial_labels(shared), stacks, strict=True):
        if not stack_over:
            members = "seeds=" + "-".join(str(points[j].get("seed", "")) for j in g)
        else:
            members = "+".join(
                ",".join(
                    f"{k.rsplit('.', 1)[-1]}={flat[j][k]}" for k in sorted(apart) if k in flat[j]
                )
                for j in g
            )
        labels.append(f"{label}_{members}"[:100])
    return labels


def _trial_name(trial: Any, labels: list[str]) -> str:
    for key in ("point", "stack"):
        if key in trial.config:
            return labels[trial.config[key]]
    return f"optuna_{trial.trial_id}"


def _code_version() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return f"{raystudy.__version__}+{commit}" if commit else raystudy.__version__


def check_study_dir(output: Path, name: str, overwrite: bool) -> Path:
    """Where the study will live, checked without writing anything: StudyError when --output
    cannot hold it, or a study is there already and `overwrite` is not set."""
    study_dir = (output / name).resolve()
    try:
        # The nearest folder that exists is where this study's folders will be made.
        existing = study_dir
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise StudyError(
                f"--output {output}: {existing} is a file, not a folder; name a folder (it is "
                "created if missing)"
            )
        occupied = existing == study_dir and any(study_dir.iterdir())
    except OSError as exc:  # a folder on the way that this user may not look into
        raise StudyError(
            f"--output {output}: cannot read {exc.filename or study_dir} ({exc.strerror})"
        ) from None
    if occupied and not overwrite:
        what = (
            f"already holds a study named {name!r}"
            if (study_dir / STUDY_FILE).is_file()
            else "is not empty (and holds no raystudy study)"
        )
        raise StudyError(
            f"{study_dir} {what}; pass --overwrite to delete it and start again, "
            f"`raystudy resume {name}` to finish it, or --output to write elsewhere"
        )
    # Permissions alone do not tell (root, read-only mounts, /proc): try, and leave nothing.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".raystudy-", dir=existing))
    except OSError as exc:
        raise StudyError(
            f"--output {output}: cannot create folders in {existing} ({exc.strerror or exc}); "
            "name a folder you can write to"
        ) from None
    return study_dir


def make_study_dir(study_dir: Path, overwrite: bool) -> Path | None:
    """Create the study folder checked by `check_study_dir`, deleting the study in it first
    when `overwrite`. Returns the topmost folder this made (what to remove if the study
    fails while starting), or None when the (empty) study folder existed already."""
    if overwrite and study_dir.is_dir():
        shutil.rmtree(study_dir)
    made = None
    for folder in (study_dir, *study_dir.parents):
        if folder.exists():
            break
        made = folder
    study_dir.mkdir(parents=True, exist_ok=True)
    return made


def _remove_new(study_dir: Path, made: Path | None) -> None:
    """Undo `make_study_dir` and what was written since, so a failed start blocks no rerun.
    The study folder was new or empty when this attempt began: nothing in it is older."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        return
    for child in study_dir.iterdir() if study_dir.is_dir() else ():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


#: What --address may be, for messages about one that Ray cannot join.
ADDRESSES = (
    "'auto' (the cluster `ray start --head` started on this machine), HOST:PORT of a head "
    "node (its GCS port, 6379 unless set), ray://HOST:10001 (Ray Client; needs "
    "`pip install 'ray[client]'`), or no --address to start a local Ray"
)


def _check_address(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a HOST:PORT that nothing answers at, at once: ray.init waits a minute for a
    GCS there and then exits the process."""
    import socket

    if address in ("auto", "local") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return  # ray.init says what is wrong with the form
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise StudyError(
            f"--address {address!r}: nothing answers at {host}:{port} ({reason}); start the "
            f"head there (`ray start --head --port {port}`) or fix the address; allowed: "
            f"{ADDRESSES}"
        ) from None


def connect(address: str | None) -> None:
    """Join `address` or start a local Ray; the dashboard stays off (no open ports)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Tune warns whenever checkpoints come faster than every 5 s, which short trials do by
    # design; the warning says nothing a user can act on.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # The searcher's metric exists only in a trial's final result, not in its train reports.
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    if ray.is_initialized():
        return
    if address:
        _check_address(address)
        try:
            ray.init(address=address, log_to_driver=True)
        # Ray exits the process (SystemExit) when a GCS it found stops answering.
        except (ValueError, ConnectionError, TimeoutError, RuntimeError, SystemExit) as exc:
            reason = (
                "no Ray head answered there"
                if isinstance(exc, SystemExit)
                else (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            )
            raise StudyError(
                f"--address {address!r}: cannot join a Ray cluster there ({reason}); "
                f"allowed: {ADDRESSES}"
            ) from None
    else:
        # "local": always a cluster of our own; a bare ray.init() would join any other local
        # cluster named in /tmp/ray (another user's study, a test run).
        ray.init(address="local", include_dashboard=False, log_to_driver=True)


def trial_resources(spec: StudySpec) -> dict[str, float]:
    """What each trial asks for, fitted to the cluster we are connected to and the node types
    its autoscaler can launch (`raystudy.resources`); StudyError when nothing can hold it."""
    want = spec.resources
    try:
        return cluster_request(want.cpu, want.gpu, want.autoscale, spec.name)
    except ResourceError as exc:
        raise StudyError(str(exc)) from None


class FinalMetricOptunaSearch(OptunaSearch):
    """OptunaSearch that reports a trial's intermediate values only when they exist.

    Trials report `train/*` while training and the searched metric (`dis/*`, `transfer/*`)
    once, at the end; stock OptunaSearch indexes every result by the metric and fails.
    """

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if isinstance(self.metric, str) and self.metric not in result:
            return
        super().on_trial_result(trial_id, result)


def optuna_storage_url(spec: StudySpec, study_dir: Path) -> str:
    """Where the study's Optuna study lives: `search.storage`, or optuna.db in its folder."""
    return spec.search.storage or f"sqlite:///{study_dir / 'optuna.db'}"


def _optuna_study_exists(url: str, name: str) -> bool:
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
        raise StudyError(
            f"search.storage {url}: cannot read the Optuna storage ({type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:300]})"
        ) from None


def check_optuna_study(spec: StudySpec, overwrite: bool) -> None:
    """Refuse a new study whose `search.storage` already holds an Optuna study of its name
    (left by an earlier study, in another --output): Optuna would add to it, and its best
    trial and TPE's history would include trials that are no part of this study. Under
    `overwrite` it is deleted when the study starts (`clear_optuna_study`)."""
    if spec.search.method != "optuna" or not spec.search.storage or overwrite:
        return
    if _optuna_study_exists(spec.search.storage, spec.name):
        raise StudyError(
            f"search.storage {spec.search.storage} already holds an Optuna study named "
            f"{spec.name!r}; pass --overwrite to delete it and start again, or give this "
            "study another name"
        )


def clear_optuna_study(url: str, name: str) -> bool:
    """Delete the Optuna study `name` from the storage at `url` (--overwrite: the study
    starts afresh); returns whether there was one."""
    import optuna

    if not _optuna_study_exists(url, name):
        return False
    try:
        optuna.delete_study(study_name=name, storage=url)
    except KeyError:  # gone meanwhile
        return False
    return True


def _searcher(
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

    samplers = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=search.seed),
        "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=search.seed),
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


def _tuner(
    spec: StudySpec,
    study_dir: Path,
    context: dict[str, Any],
    resources: dict[str, float],
    verbose: int = 1,
    overwrite: bool = False,
) -> Any:
    """The Tuner of a new study (a resumed one is rebuilt by `Tuner.restore`)."""
    from ray import tune

    points = spec.points()
    searcher, scheduler, target = _searcher(spec, study_dir, overwrite)
    if spec.execution.seeds_per_trial > 1:
        labels, key = stack_labels(points, spec.stacks(), spec.execution.stack_over), "stack"
    else:
        labels, key = trial_labels(points), "point"
    name_fn = functools.partial(_trial_name, labels=labels)
    if spec.search.method == "optuna":
        param_space: dict[str, Any] = {}
        num_samples = spec.search.num_samples
    else:
        param_space = {key: tune.grid_search(list(range(len(labels))))}
        num_samples = 1
    return tune.Tuner(
        _make_trainable(spec, context, resources),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=num_samples,
            max_concurrent_trials=spec.execution.max_concurrent_trials,
            # Ended by `_time_budget` where it can be, so that resume continues the trials.
            time_budget_s=None if _budget_by_signal() else spec.execution.time_budget_s,
            reuse_actors=True,
            trial_name_creator=name_fn,
            trial_dirname_creator=name_fn,
            **target,
        ),
        run_config=_run_config(spec, study_dir, verbose),
    )


def _run_config(spec: StudySpec, study_dir: Path, verbose: int = 1) -> Any:
    from ray import tune

    return tune.RunConfig(
        name=TUNE_DIR,
        storage_path=str(study_dir),
        failure_config=tune.FailureConfig(max_failures=spec.execution.max_failures),
        checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        verbose=verbose,
    )


def _make_trainable(spec: StudySpec, context: dict[str, Any], resources: dict[str, float]) -> Any:
    from ray import tune

    return tune.with_resources(
        tune.with_parameters(
            _trainable,
            base=spec.base(),
            points=spec.points(),
            context={**context, "cpus": resources["cpu"], "gpu": resources["gpu"]},
            **_stacking(spec),
        ),
        resources,
    )


def _stacking(spec: StudySpec) -> dict[str, Any]:
    """What a trainable needs to run stacks of seeds (nothing when seeds_per_trial is 1)."""
    if spec.execution.seeds_per_trial == 1:
        return {}
    return {"stacks": spec.stacks(), "labels": trial_labels(spec.points())}


def trial_state(last_result: dict[str, Any], error: bool) -> str:
    """What became of a trial that Tune no longer runs, from its last result: FINISHED (it
    reported its final scores), ERROR, STOPPED (the scheduler stopped it before them: Tune
    ended it with `done` on its last result) or UNFINISHED (Ctrl-C or a time budget ended
    the study: Tune stops its trials without `done`)."""
    if error:
        return "ERROR"
    if last_result.get(EVALUATED):
        return FINISHED
    return STOPPED if last_result.get(_DONE) else UNFINISHED


def _states(grid: Any) -> tuple[dict[str, int], list[str]]:
    """Count what actually finished (fit() returns normally after Ctrl-C or a time budget),
    and the Tune trial ids of the trials the scheduler stopped."""
    states: Counter[str] = Counter()
    stopped = []
    for r in grid:
        state = trial_state(r.metrics or {}, r.error is not None)
        states[state] += 1
        if state == STOPPED and r.metrics.get("trial_id"):
            stopped.append(str(r.metrics["trial_id"]))
    return dict(states), stopped


#: Tune ends a run on this signal as on Ctrl-C (`ray.tune.tune._setup_signal_catching`).
_TUNE_STOP_SIGNAL = getattr(signal, "SIGUSR1", None)


def _budget_by_signal() -> bool:
    """Whether `_time_budget` can end the study as Ctrl-C does (Tune catches signals only
    when it runs in the main thread); if not, Tune's own time budget is used."""
    return _TUNE_STOP_SIGNAL is not None and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _time_budget(seconds: float | None) -> Iterator[None]:
    """End the Tune run inside after `seconds` as Ctrl-C does: Tune saves the study with its
    running trials unfinished, and `resume` continues them from their checkpoints. Tune's own
    `time_budget_s` marks them TERMINATED instead, which a resume skips as finished.

    The signal is sent once Tune's handler is in place, and again every few seconds until the
    run ends (a handler left by an earlier run in the process would swallow the first one).
    """
    if seconds is None or not _budget_by_signal():
        yield
        return
    over = threading.Event()

    def stop() -> None:
        if over.wait(seconds):
            return
        while not over.is_set():
            if signal.getsignal(_TUNE_STOP_SIGNAL) not in (signal.SIG_DFL, signal.SIG_IGN, None):
                signal.raise_signal(_TUNE_STOP_SIGNAL)
            over.wait(2.0)

    timer = threading.Thread(target=stop, name="raystudy-time-budget", daemon=True)
    timer.start()
    try:
        yield
    finally:
        over.set()
        timer.join()


def load_study_spec(study_dir: Path, check_data: bool = False) -> StudySpec:
    """The study's resolved spec. Reading results needs no dataset file, so the data are
    checked only on request (`resume`, which runs trials); a spec that no longer validates
    is a StudyError saying so."""
    from raystudy.spec import SpecError, load_spec

    try:
        return load_spec(study_dir / "spec.yaml", check_data=check_data)
    except SpecError as exc:
        raise StudyError(f"{exc}\n(the study's spec.yaml no longer validates)") from None


def run_study(
    spec: StudySpec,
    *,
    output: Path = Path("studies"),
    address: str | None = None,
    overwrite: bool = False,
    verbose: int = 1,
) -> StudyOutcome:
    """Run every trial of `spec` under Ray Tune and wait for the study to end.

    What can refuse the study is asked first, in order of cost (the output folder, the
    tracking store, Ray, the trial's resources); only then are the study folder and the
    MLflow parent run made, so a refused study leaves nothing that blocks a rerun.
    """
    started = time.monotonic()
    study_dir = check_study_dir(output, spec.name, overwrite)
    check_optuna_study(spec, overwrite)
    if spec.tracking.uri:  # the default store is made in the study folder, which is ours
        try:
            StudyTracker.check(spec.tracking.uri, spec.name)
        except (TrackingUnreachable, TrackingRejected) as exc:
            raise _tracking_error(exc) from None
    connect(address)
    resources = trial_resources(spec)
    version = _code_version()
    tracker, info, tuner = _start(spec, study_dir, overwrite, version, resources, verbose)
    try:
        with _time_budget(spec.execution.time_budget_s):
            states, stopped = _states(tuner.fit())
    except BaseException:
        _mark_killed(tracker)
        raise
    return _finish(tracker, info, states, started, stopped)


def _tracking_error(exc: TrackingUnreachable | TrackingRejected) -> StudyError:
    if isinstance(exc, TrackingUnreachable):
        return StudyError(f"{exc}: start the server (or fix tracking.uri) and run again")
    return StudyError(f"{exc}; allowed: {ALLOWED_TRACKING_URIS}")


def _start(
    spec: StudySpec,
    study_dir: Path,
    overwrite: bool,
    version: str,
    resources: dict[str, float],
    verbose: int,
) -> tuple[StudyTracker, StudyInfo, Any]:
    """The study folder, its files, the MLflow parent run and the Tuner; a failure on the
    way removes what this attempt made (and deletes its parent run), never an older study."""
    made = None
    tracker = None
    try:
        try:
            made = make_study_dir(study_dir, overwrite)
        except OSError as exc:
            raise StudyError(f"cannot create the study folder {study_dir} ({exc})") from None
        (study_dir / "spec.yaml").write_text(
            yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False)
        )
        uri = spec.tracking.uri or default_uri(study_dir)
        try:
            tracker = StudyTracker.start(
                uri, spec.name, study_dir / "mlartifacts", tags={VERSION_TAG: version}
            )
            tracker.log_artifact(study_dir / "spec.yaml")
        except (TrackingUnreachable, TrackingRejected) as exc:
            raise _tracking_error(exc) from None
        info = StudyInfo(
            spec.name,
            study_dir,
            uri,
            tracker.experiment_id,
            tracker.parent_run_id,
            spec.num_tune_trials(),
            spec.num_trials(),
        )
        info.write()
        tuner = _tuner(spec, study_dir, _context(info, version), resources, verbose, overwrite)
    except BaseException:
        if tracker is not None:
            tracker.discard()
        _remove_new(study_dir, made)
        raise
    return tracker, info, tuner


def _mark_killed(tracker: StudyTracker) -> None:
    # The study's own error matters more than a parent run left RUNNING on a lost server.
    with contextlib.suppress(TrackingUnreachable):
        tracker.finish("KILLED")


def _context(info: StudyInfo, version: str) -> dict[str, Any]:
    return {
        "tracking_uri": info.tracking_uri,
        "experiment_id": info.experiment_id,
        "parent_run_id": info.parent_run_id,
        "study": info.name,
        "code_version": version,
    }


def _finish(
    tracker: StudyTracker,
    info: StudyInfo,
    states: dict[str, int],
    started: float,
    stopped: Sequence[str] = (),
) -> StudyOutcome:
    """Complete the MLflow record of the study; say so instead when its store is unreachable."""
    wall_s = time.monotonic() - started
    ok = StudyOutcome(info, states, wall_s).ok
    try:
        synced = sync_from_tune(tracker, info)
        # Every trial has stopped by now: a run still open lost its process mid-way.
        tracker.close_running_trials()
        tracker.tag_killed_trials(stopped, STOPPED_TAG, STOPPED_BY)
        tracker.log_metrics(
            {
                "study/trials_finished": states.get(FINISHED, 0),
                "study/trials_stopped": states.get(STOPPED, 0),
                "study/wall_s": wall_s,
            }
        )
        tracker.finish("FINISHED" if ok else "FAILED")
    except TrackingUnreachable as exc:
        return StudyOutcome(info, states, wall_s, tracking_error=str(exc))
    return StudyOutcome(info, states, wall_s, synced=synced)


def sync_from_tune(tracker: StudyTracker, info: StudyInfo) -> int:
    """Log to MLflow every finished trial whose run is missing or incomplete there (its
    store was unreachable while it ran), from what Tune's storage recorded of it; returns
    how many runs were completed. Runs that finished normally are not touched."""
    from raystudy.analysis.tune_results import run_records

    if not (info.study_dir / TUNE_DIR).is_dir():
        return 0
    # Runs are named like their trial's folder: finished ones are not even read from disk.
    done = {name for name, status in tracker.trial_statuses().items() if status == "FINISHED"}
    version = _code_version()
    synced = 0
    for record in run_records(info.study_dir, skip=done):
        record = dataclasses.replace(record, tags={**record.tags, VERSION_TAG: version})
        synced += sync_run(info.tracking_uri, info.experiment_id, info.parent_run_id, record)
    return synced


def resume_study(
    study_dir: Path,
    *,
    address: str | None = None,
    restart_errored: bool = False,
) -> StudyOutcome:
    """Finish an interrupted study: unfinished trials continue from their last checkpoint,
    finished ones are not run again; errored ones resume (or restart from scratch)."""
    from ray import tune

    started = time.monotonic()
    info = StudyInfo.read(study_dir)
    spec = load_study_spec(study_dir, check_data=True)
    tune_dir = study_dir / TUNE_DIR
    if not tune.Tuner.can_restore(str(tune_dir)):
        raise StudyError(
            f"{tune_dir} holds no Tune state to resume (the study stopped before its first "
            f"trial started); run it again with `raystudy run --overwrite`"
        )
    try:
        # Found by reading only, so that a store that is down is said before Ray starts.
        tracker = StudyTracker.attach(info.tracking_uri, info.experiment_id, info.parent_run_id)
    except TrackingUnreachable as exc:
        raise _resume_unreachable(exc, info) from exc
    except TrackingRejected as exc:
        raise StudyError(f"{exc} (recorded in {study_dir / STUDY_FILE})") from None
    connect(address)
    resources = trial_resources(spec)
    try:
        tracker.reopen()
    except TrackingUnreachable as exc:
        raise _resume_unreachable(exc, info) from exc
    try:
        trainable = _make_trainable(spec, _context(info, _code_version()), resources)
        tuner = tune.Tuner.restore(
            str(tune_dir),
            trainable=trainable,
            resume_unfinished=True,
            resume_errored=not restart_errored,
            restart_errored=restart_errored,
        )
        with _time_budget(spec.execution.time_budget_s):
            states, stopped = _states(tuner.fit())
    except BaseException:
        _mark_killed(tracker)
        raise
    return _finish(tracker, info, states, started, stopped)


def _resume_unreachable(exc: TrackingUnreachable, info: StudyInfo) -> StudyError:
    return StudyError(
        f"{exc}: start it and resume again; meanwhile `raystudy analyze {info.name} "
        "--from-tune` reads the finished trials from Tune's storage"
    )


def _tune_trials(tune_dir: Path) -> list[tuple[dict[str, Any], Any]]:
    """(trial, runtime) of each trial in the latest experiment state of a study's Tune
    storage, as plain JSON (never the pickled parts); empty before Tune wrote one."""
    states = sorted(tune_dir.glob("experiment_state-*.json"))
    if not states:
        return []
    data = json.loads(states[-1].read_text())
    out = []
    for trial_json, runtime_json in data.get("trial_data", []):
        runtime = json.loads(runtime_json) if isinstance(runtime_json, str) else runtime_json
        out.append((json.loads(trial_json), runtime))
    return out


def tune_states(tune_dir: Path) -> dict[str, str]:
    """Tune trial id -> Tune state (TERMINATED, ERROR, RUNNING, ...) from the latest
    experiment state in a study's Tune storage; empty before Tune wrote one."""
    out: dict[str, str] = {}
    for trial, _runtime in _tune_trials(tune_dir):
        out[str(trial.get("trial_id", len(out)))] = trial["status"]
    return out


def tune_outcomes(tune_dir: Path) -> dict[str, str]:
    """Tune trial id -> state as `tune_states`, with Tune's TERMINATED told apart by the
    trial's last result (`trial_state`): TERMINATED (finished), STOPPED (by the scheduler)
    or UNFINISHED (a time budget ended it)."""
    out: dict[str, str] = {}
    for trial, runtime in _tune_trials(tune_dir):
        state = trial["status"]
        last = runtime.get("last_result") if isinstance(runtime, dict) else None
        # A state written without the last result (another Ray) stays as Tune has it.
        if state == "TERMINATED" and isinstance(last, dict):
            state = trial_state(last, error=False)
        out[str(trial.get("trial_id", len(out)))] = state
    return out


def study_status(study_dir: Path) -> dict[str, int]:
    """Trial counts by state, from disk: Tune's (RUNNING, ERROR, PENDING, ...), with its
    TERMINATED split into TERMINATED (finished), STOPPED (by the scheduler, before the
    trial's scores) and UNFINISHED (`tune_outcomes`).

    A driver that was killed leaves its trials marked RUNNING: they are what `resume`
    continues.
    """
    info = StudyInfo.read(study_dir)
    counts = Counter(tune_outcomes(study_dir / TUNE_DIR).values())
    if info.num_trials > sum(counts.values()):
        counts["PENDING"] += info.num_trials - sum(counts.values())
    return dict(counts)
