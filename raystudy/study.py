"""The only module that knows Ray Tune: a validated spec -> a Tuner over its grid, and its run.

Everything a study writes lives under `<output>/<name>/`: Tune's state (`tune/`), the MLflow
store (`mlflow.db`, `mlartifacts/`) unless the spec names another, the resolved spec and
`study.json`, which tells `analyze` (and a later `resume`) where the results are.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

import raystudy
from raystudy.spec import StudySpec, TrialConfig, flatten, varying
from raystudy.tracking import StudyTracker, default_uri
from raystudy.trial import EVALUATED, TrialContext, run_trial

STUDY_FILE = "study.json"
TUNE_DIR = "tune"
CHECKPOINT_FILE = "state.pt"


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
    num_trials: int

    def write(self) -> None:
        data = {**self.__dict__, "study_dir": str(self.study_dir)}
        (self.study_dir / STUDY_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def read(cls, study_dir: Path) -> StudyInfo:
        path = study_dir / STUDY_FILE
        if not path.is_file():
            raise StudyError(
                f"{study_dir} is not a raystudy study (no {STUDY_FILE}); "
                f"`raystudy run SPEC --output {study_dir.parent}` creates one"
            )
        data = json.loads(path.read_text())
        return cls(**{**data, "study_dir": Path(data["study_dir"])})


@dataclass(frozen=True)
class StudyOutcome:
    info: StudyInfo
    states: dict[str, int]
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.states.get("TERMINATED", 0) == self.info.num_trials


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
    config: dict[str, Any], *, trials: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    from ray import tune

    tune_context = tune.get_context()
    trial_config = TrialConfig.model_validate(trials[config["point"]])
    ctx = TrialContext(
        trial_id=tune_context.get_trial_id(),
        trial_name=tune_context.get_trial_name(),
        **context,
    )
    run_trial(trial_config, ctx, TuneReporter())


def trial_labels(spec: StudySpec) -> list[str]:
    """Short names from the values that vary across the grid, e.g. `003_ada_gvae_beta=4`."""
    points = spec.points()
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


def _trial_name(trial: Any, labels: list[str]) -> str:
    return labels[trial.config["point"]]


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


def prepare_study_dir(output: Path, name: str, overwrite: bool) -> Path:
    study_dir = (output / name).resolve()
    if study_dir.exists() and any(study_dir.iterdir()):
        if not overwrite:
            raise StudyError(
                f"{study_dir} already holds a study named {name!r}; pass --overwrite to delete "
                "it and start again, or --output to write elsewhere"
            )
        shutil.rmtree(study_dir)
    study_dir.mkdir(parents=True, exist_ok=True)
    return study_dir


def connect(address: str | None) -> None:
    """Join `address` or start a local Ray; the dashboard stays off (no open ports)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Tune warns whenever checkpoints come faster than every 5 s, which short trials do by
    # design; the warning says nothing a user can act on.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=True)
    else:
        ray.init(include_dashboard=False, log_to_driver=True)


def trial_resources(spec: StudySpec) -> dict[str, float]:
    """What each trial asks for, fitted to the cluster we are connected to.

    A trial asking for a GPU on a cluster without one would pend forever without an error, so
    the same YAML runs on CPU there; a request no node can ever satisfy fails now.
    """
    import ray

    cluster = ray.cluster_resources()
    cpus, gpus = cluster.get("CPU", 0.0), cluster.get("GPU", 0.0)
    want = spec.resources
    if want.cpu > cpus:
        raise StudyError(
            f"resources.cpu={want.cpu} per trial, but the Ray cluster has only {cpus:g} CPUs"
        )
    if want.gpu > 0 and gpus == 0:
        print(f"No GPU in the Ray cluster: the {spec.name!r} trials run on CPU.", flush=True)
        return {"cpu": want.cpu, "gpu": 0.0}
    if want.gpu > gpus:
        raise StudyError(
            f"resources.gpu={want.gpu} per trial, but the Ray cluster has only {gpus:g} GPUs"
        )
    return {"cpu": want.cpu, "gpu": want.gpu}


def run_study(
    spec: StudySpec,
    *,
    output: Path = Path("studies"),
    address: str | None = None,
    overwrite: bool = False,
    verbose: int = 1,
) -> StudyOutcome:
    """Run every grid point of `spec` as a Tune trial and wait for the study to end."""
    from ray import tune

    started = time.monotonic()
    trials = spec.trials()
    study_dir = prepare_study_dir(output, spec.name, overwrite)
    (study_dir / "spec.yaml").write_text(
        yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False)
    )
    uri = spec.tracking.uri or default_uri(study_dir)
    version = _code_version()
    tracker = StudyTracker.start(
        uri, spec.name, study_dir / "mlartifacts", tags={"raystudy.version": version}
    )
    tracker.log_artifact(study_dir / "spec.yaml")
    info = StudyInfo(
        spec.name, study_dir, uri, tracker.experiment_id, tracker.parent_run_id, len(trials)
    )
    info.write()
    try:
        connect(address)
        resources = trial_resources(spec)
        context = {
            "tracking_uri": uri,
            "experiment_id": tracker.experiment_id,
            "parent_run_id": tracker.parent_run_id,
            "study": spec.name,
            "cpus": resources["cpu"],
            "code_version": version,
        }
        trainable = tune.with_resources(
            tune.with_parameters(
                _trainable, trials=[t.model_dump(mode="json") for t in trials], context=context
            ),
            resources,
        )
        name_fn = functools.partial(_trial_name, labels=trial_labels(spec))
        tuner = tune.Tuner(
            trainable,
            param_space={"point": tune.grid_search(list(range(len(trials))))},
            tune_config=tune.TuneConfig(
                reuse_actors=True, trial_name_creator=name_fn, trial_dirname_creator=name_fn
            ),
            run_config=tune.RunConfig(
                name=TUNE_DIR,
                storage_path=str(study_dir),
                failure_config=tune.FailureConfig(max_failures=1),
                checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
                verbose=verbose,
            ),
        )
        grid = tuner.fit()
        # fit() returns normally after Ctrl-C or a time budget: count what actually finished.
        states = Counter(
            "TERMINATED"
            if r.error is None and r.metrics.get(EVALUATED)
            else ("ERROR" if r.error is not None else "UNFINISHED")
            for r in grid
        )
    except BaseException:
        tracker.finish("FAILED")
        raise
    outcome = StudyOutcome(info, dict(states), time.monotonic() - started)
    tracker.log_metrics(
        {"study/trials_finished": states.get("TERMINATED", 0), "study/wall_s": outcome.wall_s}
    )
    tracker.finish("FINISHED" if outcome.ok else "FAILED")
    return outcome
