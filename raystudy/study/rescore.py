"""`raystudy rescore`: new metrics or probes over a finished study's logged models, without
training again, their keys written into the trial runs so that `analyze` reads them as if the
study had been trained with them.

Each FINISHED trial run with a logged encoder becomes one Ray task with the study's trial
resources (`raystudy.trials.rescore.rescore_run`); its config is the study's own trial config
(spec.yaml's grid point that the run's params name), with `evaluation.metrics` and
`evaluation.probes` replaced by what is asked, so the draws (`evaluation.seed`) and sizes are
the trial's. A run records what was added to it (the tag `raystudy.rescored`) in the batch of
its last scores, so a rescore that is killed, or fails on some runs, is finished by running it
again: runs that have everything asked are skipped, and none is scored twice. The study's
driver lock is held throughout, so no `run` or `resume` writes the study meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from raystudy.checks.names import known_names
from raystudy.models.params import trial_params
from raystudy.registry import unknown_name_message
from raystudy.spec import StudySpec, TrialConfig, varying
from raystudy.spec.url_secrets import expand
from raystudy.study.folder import (
    ClusterUnavailable,
    StudyError,
    StudyInfo,
    check_store,
    load_study_spec,
)
from raystudy.study.lock import driver_lock, refuse_if_driven
from raystudy.study.report import PROBLEM, WARNING, Line, Report
from raystudy.study.setup import trial_resources
from raystudy.tags import MODEL_ERROR_TAG, MODEL_TAG
from raystudy.tracking.reader import trial_runs
from raystudy.trials.rescore import RescoreJob, rescore_run, rescored_names, wanted
from raystudy.tune.cluster import TuneSetupError, connect
from raystudy.tune.tasks import map_tasks


@dataclass
class RescoreOutcome:
    study: str
    asked: list[str]
    total: int = 0
    rescored: list[str] = field(default_factory=list)
    already: int = 0
    #: Runs with no logged encoder (log_models false, a ground-truth decoder), and why.
    without_model: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    wall_s: float = 0.0

    def report(self, output: Path) -> Report:
        lines = [
            Line(
                f"Rescored {len(self.rescored)} of {self.total} trial runs of {self.study!r} "
                f"with {', '.join(self.asked)} in {self.wall_s:.0f} s"
                + (f" ({self.already} had them already)" if self.already else "")
            )
        ]
        for name, why in self.without_model[:10]:
            lines.append(Line(f"  not rescored, {name}: {why}", WARNING))
        if len(self.without_model) > 10:
            lines.append(Line(f"  ... and {len(self.without_model) - 10} more without a model"))
        for name, why in self.failed[:10]:
            lines.append(Line(f"  failed, {name}: {why}", PROBLEM))
        if self.failed:
            lines.append(
                Line(
                    f"{len(self.failed)} runs failed; the same command scores them again "
                    "(runs already rescored are skipped)",
                    PROBLEM,
                )
            )
        lines.append(Line(f"Analysis:  raystudy analyze {self.study} --output {output}"))
        return Report(lines, 1 if self.failed else 0)


def check_names(metrics: Sequence[str], probes: Sequence[str]) -> None:
    """StudyError, before any work, for nothing asked or a name no registry has."""
    if not metrics and not probes:
        raise StudyError("rescore: give --metrics and/or --probes (what to add to each run)")
    known = known_names()
    for kind, given in (("metric", metrics), ("probe", probes)):
        for name in given:
            if name not in known[kind]:
                raise StudyError(f"rescore: {unknown_name_message(kind, name, known[kind])}")


def match_configs(spec: StudySpec, runs: Sequence[Run]) -> dict[str, TrialConfig | str]:
    """Each run's trial config from the study's grid, found by the params the run logged
    (indexed on the keys that vary between grid points); a run that names no grid point, or
    more than one, maps to the reason instead."""
    trials = spec.trials()
    logged = [{k: str(v) for k, v in trial_params(t).items()} for t in trials]
    keys = [k for k in varying(spec.points()) if all(k in p for p in logged)]
    index: dict[tuple[str | None, ...], list[int]] = {}
    for i, params in enumerate(logged):
        index.setdefault(tuple(params[k] for k in keys), []).append(i)
    out: dict[str, TrialConfig | str] = {}
    for run in runs:
        have = run.data.params
        candidates = index.get(tuple(have.get(k) for k in keys), [])
        same = [i for i in candidates if all(have.get(k, v) == v for k, v in logged[i].items())]
        if len(same) == 1:
            out[run.info.run_id] = trials[same[0]]
        else:
            out[run.info.run_id] = (
                "its params name no trial of the study's spec.yaml"
                if not same
                else f"its params name {len(same)} trials of the study's spec.yaml"
            )
    return out


def rescore_study(
    study_dir: Path,
    metrics: Sequence[str],
    probes: Sequence[str],
    address: str | None = None,
    progress: Callable[[str], None] = print,
) -> RescoreOutcome:
    """Score every finished trial run of the study with `metrics` and `probes`, as Ray tasks,
    writing the keys into the runs; runs that have them already are skipped."""
    check_names(metrics, probes)
    refuse_if_driven(study_dir, "rescore")  # before study.json: a `run` may still be writing it
    info = StudyInfo.read(study_dir)
    spec = load_study_spec(study_dir)
    if spec.search.method == "optuna":
        raise StudyError(
            f"{study_dir}: an Optuna study's trials are chosen while it runs, so spec.yaml "
            "does not hold their configs; rescore reads grid and random studies"
        )
    check_store(info)
    asked = wanted(metrics, probes)
    outcome = RescoreOutcome(info.name, sorted(asked))
    started = time.monotonic()
    with driver_lock(study_dir, "rescore"):
        client = MlflowClient(expand(info.tracking_uri))
        runs = list(trial_runs(client, info.experiment_id, "attributes.status = 'FINISHED'"))
        outcome.total = len(runs)
        configs = match_configs(spec, runs)
        jobs: list[RescoreJob] = []
        for run in runs:
            name = run.info.run_name or run.info.run_id
            if asked <= rescored_names(run.data.tags):
                outcome.already += 1
                continue
            if MODEL_TAG not in run.data.tags:
                outcome.without_model.append((name, _no_model(run)))
                continue
            config = configs[run.info.run_id]
            if isinstance(config, str):
                outcome.failed.append((name, config))
                continue
            evaluation = config.evaluation.model_copy(
                update={"metrics": list(metrics), "probes": list(probes)}
            )
            config = config.model_copy(update={"evaluation": evaluation})
            jobs.append(
                RescoreJob(
                    info.tracking_uri, run.info.run_id, name, config, tuple(metrics), tuple(probes)
                )
            )
        if jobs:
            _run_jobs(jobs, spec, address, outcome, progress)
    outcome.wall_s = time.monotonic() - started
    return outcome


def _no_model(run: Run) -> str:
    why = run.data.tags.get(MODEL_ERROR_TAG)
    return why or "no logged encoder (the study ran with execution.log_models: false)"


def _run_jobs(
    jobs: list[RescoreJob],
    spec: StudySpec,
    address: str | None,
    outcome: RescoreOutcome,
    progress: Callable[[str], None],
) -> None:
    try:
        connect(address)
    except TuneSetupError as exc:
        raise ClusterUnavailable(str(exc)) from None
    resources = trial_resources(spec)
    cpu, gpu = resources["cpu"], resources["gpu"]
    device = "cuda" if gpu > 0 else "cpu"
    progress(
        f"Rescoring {len(jobs)} trial runs as Ray tasks of {cpu:g} CPU"
        + (f" and {gpu:g} GPU" if gpu else "")
        + " each: every run encodes its evaluation sets again and fits what is added, about "
        "as long as that part of its trial took (minutes for a large study)"
    )
    started = time.monotonic()
    for k, done in enumerate(map_tasks(rescore_run, jobs, cpu, gpu, device), start=1):
        name = done.item.run_name
        if done.error is None:
            outcome.rescored.append(name)
        else:
            outcome.failed.append((name, done.error))
        elapsed = time.monotonic() - started
        eta = elapsed / k * (len(jobs) - k)
        state = "done" if done.error is None else f"failed ({done.error})"
        progress(f"{k}/{len(jobs)} {name}: {state} | {elapsed:.0f} s | ETA {eta:.0f} s")


__all__ = ["RescoreOutcome", "check_names", "match_configs", "rescore_study"]
