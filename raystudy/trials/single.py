"""One trial end to end: data, split, training, scoring, artifacts, report.

Knows nothing of Ray: `raystudy.tune.trainable` hands it a `Reporter` that forwards results and
checkpoints to Tune. Every metric goes to MLflow through `tracking.trial_run` as soon as it exists,
so a trial that fails later loses nothing already measured.
"""

from __future__ import annotations

import copy
from typing import Any

from raystudy.keys import EVALUATED, train_key
from raystudy.models.params import trial_params
from raystudy.phases import PhaseClock, phase, timing
from raystudy.scoring import build_split, split_run_params
from raystudy.spec import TrialConfig
from raystudy.tags import RUN_FINISHED
from raystudy.tracking.system_metrics import system_metrics
from raystudy.tracking.trial_run import TrialRun
from raystudy.training.loop import train
from raystudy.trials.common import (
    Reporter,
    TrialContext,
    closing_runs_on_exit,
    limited,
    record_lineage,
    restored,
    run_tags,
    torch_setup,
)
from raystudy.trials.finish import build_models, finish_model


def run_trial(config: TrialConfig, ctx: TrialContext, reporter: Reporter) -> dict[str, float]:
    """Train and score one model; every result goes to MLflow and to `reporter`, and where
    its time went (`raystudy.phases`) to MLflow as `time/*`."""
    with timing(PhaseClock()) as clock:
        return _run_trial(config, ctx, reporter, clock)


def _run_trial(
    config: TrialConfig, ctx: TrialContext, reporter: Reporter, clock: PhaseClock
) -> dict[str, float]:
    threads, device = torch_setup(ctx)
    # Built before the run opens, so that the model's size and cost are among the run's
    # params; a failure here is recorded on the run like any other (raised below).
    built = build_models([config], device)
    with phase("mlflow"):
        run = TrialRun.open(
            ctx.tracking_uri,
            ctx.experiment_id,
            ctx.trial_id,
            ctx.trial_name,
            params={**trial_params(config), **split_run_params(config), **built.cost},
            tags=run_tags(config, ctx),
            parent_run_id=ctx.parent_run_id,
        )
    if run.finished is not None:
        # Everything was measured and logged before the interruption: hand Tune the same
        # results instead of scoring (and logging) them a second time.
        reporter.report({"step": float(config.train.steps), **run.finished, EVALUATED: 1.0})
        return run.finished
    with (
        closing_runs_on_exit(lambda: [run]),
        limited(ctx, lambda: [run]),
        system_metrics(lambda: [run], ctx.system_metrics),
    ):
        built.raise_error()
        assert built.dataset is not None
        dataset, [model], [objective] = built.dataset, built.models, built.objectives
        with phase("data"):
            split = build_split(config, dataset)
        with phase("lineage"):
            record_lineage([run], config, split, device)
        logged_up_to = run.last_step(train_key("loss"))

        def on_progress(
            step: int, row: dict[str, float] | None, state: dict[str, Any] | None
        ) -> None:
            if row is not None and step > logged_up_to:
                run.log_metrics(row, step)
            with phase("report"):
                reporter.report({"step": float(step), **(row or {})}, state)

        with phase("train"):
            train(
                model,
                objective,
                dataset,
                split,
                config.train,
                seed=config.seed,
                device=device,
                on_progress=on_progress,
                resume_from=restored(reporter, [run]),
            )
        results = finish_model(run, model, dataset, split, config, device, ctx, threads)
        run.log_metrics(clock.metrics(), step=config.train.steps)
    # The run is complete before the last report: Tune may end the trial inside report().
    run.finish(RUN_FINISHED)
    reporter.report({"step": float(config.train.steps), **results, EVALUATED: 1.0})
    return results


class LocalReporter:
    """A Reporter for running a trial in this process (a notebook, a benchmark, `plan`).

    Results are kept in order; the latest checkpoint state stays in memory, so a second
    `run_trial` with the same reporter resumes where the first stopped.
    """

    def __init__(self) -> None:
        self.results: list[dict[str, float]] = []
        self.state: dict[str, Any] | None = None

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        self.results.append(dict(metrics))
        if state is not None:
            # The state holds the live model, optimiser and history: kept as it is, it
            # would follow training past this checkpoint (Tune saves it to disk at once).
            self.state = copy.deepcopy(state)

    def restore(self) -> dict[str, Any] | None:
        return self.state
