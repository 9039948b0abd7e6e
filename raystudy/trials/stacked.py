"""One Tune trial that trains S models of one configuration together (`seeds_per_trial`):
S seeds, or with `stack_over` seeds and loss weights such as beta.

Each model has its own MLflow run (params, train/* history, final metrics, artifacts), exactly
what a lone trial of it would log; only the training is shared
(`raystudy.training.stacked`). Runs are
found again by ``<ray trial id>/<member key>`` (`member_keys`: ``seed=3``, or
``model.beta=4.0,seed=3``), so a restarted trial resumes every model's run instead of opening
new ones, and models already evaluated are not evaluated again.

Tune gets, per report, the mean over the models (what a scheduler or a search reads) and each
model's own values under ``stack/<s>/`` (`raystudy.keys.stack_key`), so that a study can be
read back or synced from Tune's storage alone, model by model (`raystudy.study.records`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from raystudy.keys import DIVERGED_KEY, EVALUATED, stack_key, train_key
from raystudy.models.params import trial_params
from raystudy.phases import PhaseClock, added, phase, timing
from raystudy.scoring import build_split, split_run_params
from raystudy.spec import TrialConfig
from raystudy.tags import RUN_FAILED, RUN_FINISHED, STACK_TAG
from raystudy.tracking.system_metrics import system_metrics
from raystudy.tracking.trial_run import TrialRun
from raystudy.training.loop import TrainingDiverged
from raystudy.training.stacked import train_stacked
from raystudy.trials.common import (
    Reporter,
    TrialContext,
    closing_runs_on_exit,
    error_tags,
    limited,
    record_lineage,
    restored,
    run_tags,
    torch_setup,
)
from raystudy.trials.finish import build_models, finish_model


def member_keys(configs: list[TrialConfig]) -> list[str]:
    """What tells the models of a stack apart, ``seed=3`` or ``model.beta=4.0,seed=3``:
    the values in which they differ, seed last, unique within the stack."""
    flats = [trial_params(c) for c in configs]
    differ = sorted(
        {k for f in flats for k in f if k != "seed" and any(g.get(k) != f[k] for g in flats)}
    )
    return [",".join([*(f"{k}={f[k]}" for k in differ), f"seed={f['seed']}"]) for f in flats]


def _mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """Tune sees one result per trial: the mean over the models that have a value."""
    keys = sorted({k for r in rows for k in r})
    return {k: float(np.mean([r[k] for r in rows if k in r])) for k in keys}


def _tune_row(
    rows: list[dict[str, float] | None], diverged: dict[int, tuple[int, float]] | None = None
) -> dict[str, float]:
    """The mean over the models, and each model's own values under ``stack/<s>/``."""
    out = _mean_rows([r for r in rows if r is not None])
    for s, row in enumerate(rows):
        out.update({stack_key(s, k): v for k, v in (row or {}).items()})
    for s, (at, _) in (diverged or {}).items():
        out[stack_key(s, DIVERGED_KEY)] = float(at)
    return out


def run_seed_stack(
    configs: list[TrialConfig],
    ctx: TrialContext,
    reporter: Reporter,
    run_names: list[str],
) -> dict[str, float]:
    """Train the S `configs` (equal but for `seed` and loss weights) as one stack, score and
    log each. Each model's run gets, as `time/*` (`raystudy.phases`), its share (1/S) of the
    phases the stack went through together and the phases of its own scoring, so that the
    runs of a study add up to the study's time."""
    with timing(PhaseClock()) as clock:
        return _run_seed_stack(configs, ctx, reporter, run_names, clock)


def _run_seed_stack(
    configs: list[TrialConfig],
    ctx: TrialContext,
    reporter: Reporter,
    run_names: list[str],
    clock: PhaseClock,
) -> dict[str, float]:
    threads, device = torch_setup(ctx)
    base = configs[0]
    seeds = [c.seed for c in configs]
    # Built before the runs open, as a lone trial builds its model; a failure here is
    # recorded on every model's run (raised below), not lost before any run exists.
    built = build_models(configs, device)
    cost = built.cost
    with phase("mlflow"):
        runs = [
            TrialRun.open(
                ctx.tracking_uri,
                ctx.experiment_id,
                f"{ctx.trial_id}/{key}",
                name,
                params={
                    **trial_params(c),
                    **split_run_params(c),
                    **cost,
                    "seeds_per_trial": len(configs),
                },
                tags={**run_tags(c, ctx), STACK_TAG: ctx.trial_id},
                parent_run_id=ctx.parent_run_id,
            )
            for c, name, key in zip(configs, run_names, member_keys(configs), strict=True)
        ]
    results: list[dict[str, float] | None] = [r.finished for r in runs]
    if all(r is not None for r in results):
        final = _mean_rows([r for r in results if r is not None])
        reporter.report({"step": float(base.train.steps), **_tune_row(results), EVALUATED: 1.0})
        return final
    open_runs = {s for s, r in enumerate(results) if r is None}
    failed: set[int] = set()

    def still_open() -> list[TrialRun]:
        # A diverged model's run is already FAILED with its own error: left as it is.
        return [runs[s] for s in sorted(open_runs) if results[s] is None and s not in failed]

    def sampled() -> list[TrialRun]:
        # Runs finished at the end still get the last point, logged as the monitor stops.
        return [runs[s] for s in sorted(open_runs) if s not in failed]

    with (
        closing_runs_on_exit(still_open),
        limited(ctx, still_open),
        system_metrics(sampled, ctx.system_metrics),
    ):
        built.raise_error()
        assert built.dataset is not None
        dataset, models, objectives = built.dataset, built.models, built.objectives
        with phase("data"):
            split = build_split(base, dataset)
        with phase("lineage"):
            record_lineage([runs[s] for s in sorted(open_runs)], base, split, device)
        logged_up_to = [r.last_step(train_key("loss")) for r in runs]

        def on_progress(
            step: int,
            rows: list[dict[str, float] | None] | None,
            state: dict[str, Any] | None,
            diverged: dict[int, tuple[int, float]],
        ) -> None:
            for s, (at, loss) in diverged.items():
                if s in open_runs and s not in failed:
                    # This seed diverged; the others train on, untouched by it.
                    failed.add(s)
                    runs[s].set_tags(error_tags(TrainingDiverged(at, loss)))
                    runs[s].finish(RUN_FAILED)
            for s, row in enumerate(rows or []):
                if row is not None and step > logged_up_to[s]:
                    runs[s].log_metrics(row, step)
            with phase("report"):
                reporter.report({"step": float(step), **_tune_row(rows or [], diverged)}, state)

        with phase("train"):
            result = train_stacked(
                models,
                objectives,
                dataset,
                split,
                base.train,
                seeds=seeds,
                device=device,
                on_progress=on_progress,
                resume_from=restored(reporter, [runs[s] for s in sorted(open_runs)]),
            )
        errors: list[BaseException] = []
        shared = clock.metrics(parts=len(configs))
        for s in sorted(open_runs - set(result.diverged)):
            try:
                with timing(PhaseClock()) as own:
                    scores = finish_model(
                        runs[s], models[s], dataset, split, configs[s], device, ctx, threads
                    )
                runs[s].log_metrics(added(shared, own.metrics()), step=configs[s].train.steps)
            except Exception as exc:  # one seed's failure must not cost the others theirs
                runs[s].set_tags(error_tags(exc))
                runs[s].finish(RUN_FAILED)
                failed.add(s)
                errors.append(exc)
                continue
            runs[s].finish(RUN_FINISHED)
            results[s] = scores
        # Tune's copy of the scores goes before any model's error is raised: it is the
        # others' only record if the tracking store is lost, and `--from-tune` reads them
        # as finished from it.
        reporter.report(
            {"step": float(base.train.steps), **_tune_row(results, result.diverged), EVALUATED: 1.0}
        )
        if errors:
            raise errors[0]
    return _mean_rows([r for r in results if r is not None])
