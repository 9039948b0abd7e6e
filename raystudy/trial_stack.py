"""One Tune trial that trains S seeds of one configuration together (`seeds_per_trial`).

Each seed is its own model with its own MLflow run (params, train/* history, final metrics,
artifacts), exactly what a lone trial of that seed would log; only the training is shared
(`raystudy.stacked`). Runs are found again by ``<ray trial id>/seed=<seed>``, so a restarted
trial resumes every seed's run instead of opening new ones, and seeds already evaluated are
not evaluated again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from raystudy.data import get_dataset
from raystudy.models import VAE, build, model_cost
from raystudy.spec import TrialConfig
from raystudy.stacked import train_stacked
from raystudy.tracking import TrialRun
from raystudy.trial import (
    EVALUATED,
    Reporter,
    TrialContext,
    build_split,
    error_tags,
    evaluate,
    log_artifacts,
    run_tags,
)

STACK_TAG = "raystudy.stack"


def _mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """Tune sees one result per trial: the mean over the seeds that have a value."""
    keys = sorted({k for r in rows for k in r})
    return {k: float(np.mean([r[k] for r in rows if k in r])) for k in keys}


def run_seed_stack(
    configs: list[TrialConfig],
    ctx: TrialContext,
    reporter: Reporter,
    run_names: list[str],
) -> dict[str, float]:
    """Train the S `configs` (equal but for `seed`) as one stack, evaluate and log each."""
    from raystudy.train import TrainingDiverged

    threads = max(1, int(ctx.cpus))
    torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    base = configs[0]
    seeds = [c.seed for c in configs]
    dataset = get_dataset(base.dataset.name, **base.dataset.options)
    models: list[VAE] = []
    for c in configs:
        torch.manual_seed(c.seed)  # each seed's initial weights, as its lone trial builds them
        model, objective = build(
            c.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
        )
        models.append(model.to(device))
    cost = model_cost(
        models[0],
        objective,
        dataset.channels,
        dataset.resolution,
        dataset.factors.num_factors,
        base.train.batch_size,
    )
    runs = [
        TrialRun.open(
            ctx.tracking_uri,
            ctx.experiment_id,
            f"{ctx.trial_id}/seed={c.seed}",
            name,
            params={**c.flat(), **cost, "seeds_per_trial": len(configs)},
            tags={**run_tags(c, ctx), STACK_TAG: ctx.trial_id},
            parent_run_id=ctx.parent_run_id,
        )
        for c, name in zip(configs, run_names, strict=True)
    ]
    results: list[dict[str, float] | None] = [r.finished for r in runs]
    if all(r is not None for r in results):
        final = _mean_rows([r for r in results if r is not None])
        reporter.report({"step": float(base.train.steps), **final, EVALUATED: 1.0})
        return final
    open_runs = {s for s, r in enumerate(results) if r is None}
    try:
        split = build_split(base, dataset)
        logged_up_to = [r.last_step("train/loss") for r in runs]
        failed: set[int] = set()

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
                    runs[s].finish("FAILED")
            live = [row for row in rows or [] if row is not None]
            for s, row in enumerate(rows or []):
                if row is not None and step > logged_up_to[s]:
                    runs[s].log_metrics(row, step)
            reporter.report({"step": float(step), **_mean_rows(live)}, state)

        result = train_stacked(
            models,
            objective,
            dataset,
            split,
            base.train,
            seeds=seeds,
            device=device,
            on_progress=on_progress,
            resume_from=reporter.restore(),
        )
        errors: list[BaseException] = []
        for s in sorted(open_runs - set(result.diverged)):
            try:
                scores = evaluate(models[s], dataset, split, configs[s], device, n_jobs=threads)
                runs[s].log_metrics(scores, step=configs[s].train.steps)
                log_artifacts(runs[s], models[s], dataset, split, configs[s], device)
            except Exception as exc:  # one seed's failure must not cost the others theirs
                runs[s].set_tags(error_tags(exc))
                runs[s].finish("FAILED")
                errors.append(exc)
                continue
            runs[s].finish("FINISHED")
            results[s] = scores
        if errors:
            raise errors[0]
    except SystemExit:
        for s in open_runs:
            if results[s] is None:
                runs[s].finish("KILLED")
        raise
    except BaseException as exc:
        for s in open_runs:
            if results[s] is None and s not in failed:
                runs[s].set_tags(error_tags(exc))
                runs[s].finish("FAILED" if not isinstance(exc, KeyboardInterrupt) else "KILLED")
        raise
    final = _mean_rows([r for r in results if r is not None])
    reporter.report({"step": float(base.train.steps), **final, EVALUATED: 1.0})
    return final
