"""What one trial writes to its MLflow store, written by a benchmark's writer process through
raystudy's own tracking code (`raystudy.tracking.trial_run.TrialRun`, `tracking.system_metrics`).

`trial_shape` reads a study spec's first trial the way the trial itself builds its writes
(`raystudy.trials.single.run_trial`): its params (`trial_params` and the model's cost), its
run and lineage tags, its dataset input, its train/* keys at each report step and the final
scores it reports (`raystudy.metrics.reported`). `write_runs` is a writer process: after a
barrier it writes that shape R times, back to back, in the trial's order (open the run, read
its last system step, lineage tags, dataset input, read the last train step, one log_metrics
per report with the system points among them, the final scores, finish), timing every call.
Values are random: a store stores any float alike. Not written: figures and the logged model
(`execution.log_artifacts`, `log_models`), which go to the artifact store.

Nothing here imports torch at module level: 32 writer processes import this module.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: MLflow's tags on a run of its own (run name, user, source...) are stored too: the bench
#: counts every stored tag, and `sent` only those raystudy wrote.
OWN_TAGS_PER_RUN = 3  # TrialRun.open's role, trial id and parent tags


@dataclass(frozen=True)
class TrialShape:
    """The writes of one trial, as plain values (picklable without torch)."""

    params: dict[str, str]
    tags: dict[str, str]
    lineage: dict[str, str]
    #: (name, digest, source, profile) of its MLflow dataset input
    data: tuple[str, str, dict[str, Any], dict[str, Any]]
    train_keys: tuple[str, ...]
    report_steps: tuple[int, ...]
    final_keys: tuple[str, ...]
    final_step: int
    #: system metric points: a smoke trial lasts ~80 s (one at 60 s, the last partial one)
    system_points: int

    def counts(self) -> dict[str, int]:
        """Writes per run, before the system metrics (their keys depend on the machine)."""
        return {
            "params": len(self.params),
            "tags": len(self.tags) + len(self.lineage) + OWN_TAGS_PER_RUN,
            "train_points": len(self.train_keys) * len(self.report_steps),
            "final_points": len(self.final_keys),
            "reports": len(self.report_steps),
            "system_points": self.system_points,
        }


def report_steps(steps: int, report_every: int) -> tuple[int, ...]:
    """The steps the training loop reports train/* at (`raystudy.training.loop.train`: after
    step s when s % report_every == 0 or s == steps)."""
    return tuple(s for s in range(1, steps + 1) if s % report_every == 0 or s == steps)


def trial_shape(spec_path: Path, sets: list[str], system_points: int) -> TrialShape:
    """The writes of the first trial of the spec at `spec_path` (with `--set` overrides)."""
    import torch

    import raystudy
    from raystudy.checks import load_spec
    from raystudy.checks.metrics import _train_terms_of
    from raystudy.data import get_dataset
    from raystudy.data.splits.registry import split_tag
    from raystudy.lineage import data_input, lineage
    from raystudy.metrics.reported import reported_metrics
    from raystudy.models.params import trial_params
    from raystudy.scoring import build_split
    from raystudy.trials.common import TrialContext, build_seeded, cost_params, run_tags

    spec = load_spec(spec_path, sets, check_data=False)
    config = spec.trials()[0]
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    device = torch.device("cpu")
    model, objective = build_seeded(config, dataset, device)
    params = {
        **trial_params(config),
        **cost_params(model, objective, dataset, config.train.batch_size),
    }
    # Placeholders as long as the real values: a Ray node id, a version with its commit.
    version = f"{raystudy.__version__}+{'0' * 7}"
    ctx = TrialContext("", "", None, spec.name, "", "", code_version=version, node="0" * 56)
    data = data_input(config.dataset.name, config.dataset.options, split_tag(config.split), split)
    terms = _train_terms_of(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    return TrialShape(
        params={k: str(v) for k, v in params.items()},
        tags=run_tags(config, ctx),
        lineage=lineage(device),
        data=(data.name, data.digest, data.source, data.profile),
        train_keys=tuple(sorted(terms)),
        report_steps=report_steps(config.train.steps, config.train.report_every),
        final_keys=tuple(sorted(reported_metrics(config, split, dataset.factors.names))),
        final_step=config.train.steps,
        system_points=system_points,
    )


def schedule(reports: int, system_points: int) -> list[int]:
    """How many system points follow each report (the last entry: after the final scores),
    spread as a once-a-minute sampler spreads them over the training: point j < P - 1 after
    report max(0, floor((j + 1) * reports / P) - 1), the last, partial one when the trial ends."""
    after = [0] * (reports + 1)
    for j in range(system_points - 1):
        after[max(0, (j + 1) * reports // system_points - 1) if reports else 0] += 1
    if system_points:
        after[reports] += 1
    return after


@dataclass(frozen=True)
class Job:
    """One writer's part of a cell: its store, the study's experiment and parent run."""

    uri: str
    experiment_id: str
    parent_run_id: str
    shape: TrialShape
    runs: int
    writer: int


@dataclass
class WriterResult:
    writer: int
    #: wall-clock (time.time) when it left the barrier and when it ended
    started: float = 0.0
    ended: float = 0.0
    #: call kind -> seconds of each call
    calls: dict[str, list[float]] = field(default_factory=dict)
    #: writes a busy store made `retry_busy` repeat
    retries: int = 0
    errors: list[str] = field(default_factory=list)
    #: dataset inputs the store refused (the run goes on, tagged `raystudy.lineage_error`)
    lineage_errors: list[str] = field(default_factory=list)
    sent: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("metrics", "params", "tags"), 0)
    )


def _count_retries(result: WriterResult) -> None:
    """Counts in `result` the repeats of raystudy's own retry (`tracking.retry.retry_busy`):
    the writer calls it by name, so it is wrapped there; every attempt still runs it."""
    from raystudy.tracking import retry, trial_run

    def retry_busy(call: Callable[[], Any], wait_s: float = retry.BUSY_WAIT_S) -> Any:
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return call()

        try:
            return retry.retry_busy(attempt, wait_s)
        finally:
            result.retries += max(0, attempts - 1)

    trial_run.retry_busy = retry_busy


def _one_run(job: Job, run_index: int, result: WriterResult) -> None:
    """One trial's writes, in its order (`raystudy.trials.single.run_trial`)."""
    from raystudy.keys import train_key
    from raystudy.tags import LINEAGE_ERROR_TAG
    from raystudy.tracking.system_metrics import SystemMetrics
    from raystudy.tracking.trial_run import TrialRun

    shape = job.shape

    def timed(kind: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = call()
        result.calls.setdefault(kind, []).append(time.perf_counter() - start)
        return out

    def points(keys: tuple[str, ...]) -> dict[str, float]:
        return {k: random.random() for k in keys}

    trial_id = f"writer{job.writer}_run{run_index}"
    run = timed(
        "open",
        lambda: TrialRun.open(
            job.uri, job.experiment_id, trial_id, trial_id, shape.params, shape.tags,
            job.parent_run_id,
        ),
    )  # fmt: skip
    result.sent["params"] += len(shape.params)
    result.sent["tags"] += len(shape.tags) + OWN_TAGS_PER_RUN
    # As the trial's sampler starts: it reads the run's last system step.
    monitor = timed("read", lambda: SystemMetrics(lambda: [run]))

    def system_point() -> None:
        # The sampler's own publishing, called here rather than from its timed thread.
        monitor._mlflow.collect_metrics()
        result.sent["metrics"] += len(monitor._mlflow.aggregate_metrics())
        timed("log_metrics", monitor._publish)

    timed("set_tags", lambda: run.set_tags(shape.lineage))
    result.sent["tags"] += len(shape.lineage)
    try:
        timed("log_dataset", lambda: run.log_dataset(*shape.data))
    except Exception as exc:
        # As `record_lineage` does: a dataset input that fails is tagged on the run, never
        # the trial's failure.
        why = f"{type(exc).__name__}: {exc}"
        result.lineage_errors.append(why.splitlines()[0][:300])
        run.set_tags({LINEAGE_ERROR_TAG: why[:5000]})
        result.sent["tags"] += 1
    timed("read", lambda: run.last_step(train_key("loss")))
    after = schedule(len(shape.report_steps), shape.system_points)
    for i, step in enumerate(shape.report_steps):
        timed("log_metrics", lambda step=step: run.log_metrics(points(shape.train_keys), step))
        result.sent["metrics"] += len(shape.train_keys)
        for _ in range(after[i]):
            system_point()
    timed("log_metrics", lambda: run.log_metrics(points(shape.final_keys), shape.final_step))
    result.sent["metrics"] += len(shape.final_keys)
    for _ in range(after[-1]):
        system_point()
    timed("finish", lambda: run.finish("FINISHED"))
    if run.offline is not None:
        raise RuntimeError(run.offline)


def write_runs(job: Job, barrier: Any, results: Any) -> None:
    """A writer process: ready its store client, wait at `barrier` for the others, write
    `job.runs` trials' runs, put its `WriterResult` on `results`. A run that raises is an
    error (as it would fail its trial) and the next one starts."""
    result = WriterResult(job.writer)
    ready = True
    try:
        from mlflow.tracking import MlflowClient

        _count_retries(result)
        # The store's client and connections exist before the clock starts, as in a trial
        # that has imported and trained before it first logs.
        MlflowClient(job.uri).get_experiment(job.experiment_id)
    except Exception:
        result.errors.append("setup: " + traceback.format_exc(limit=3))
        ready = False
    barrier.wait()
    result.started = time.time()
    for r in range(job.runs if ready else 0):
        try:
            _one_run(job, r, result)
        except Exception as exc:
            result.errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    result.ended = time.time()
    results.put(result)
