"""How big a study is and what it will cost, before running it.

`make_plan` counts trials, fits them onto a cluster (trials per GPU, trials at once), and
estimates trial-hours from a calibration in this process: each group of trials that cost the
same (`raystudy.plan.groups`) is timed at small sizes (`raystudy.plan.calibrate`) and
extrapolated to the trial's sizes (`raystudy.plan.extrapolate`), within a time budget. Groups
beyond `max_groups` or the budget are costed from the calibrated group most like them, and the
plan says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from raystudy.plan.cache import CalibrationCache
from raystudy.plan.calibrate import Progress
from raystudy.plan.costing import Calibration
from raystudy.plan.measured import measured_kinds
from raystudy.plan.result import MeasuredRun, Plan
from raystudy.spec import StudySpec


def make_plan(
    spec: StudySpec,
    cluster_cpus: float,
    cluster_gpus: float = 0.0,
    calibration_steps: int | None = 3,
    max_groups: int = 8,
    budget_s: float = 40.0,
    fit_points: int = 200,
    progress: Progress | None = None,
    cache: CalibrationCache | None = None,
    recalibrate: bool = False,
    measured: Sequence[MeasuredRun] = (),
    measured_from: str | None = None,
) -> Plan:
    """The study's plan on a cluster; with `calibration_steps`, its cost too, from up to
    `max_groups` training groups and as many evaluation groups, timed within `budget_s`
    seconds: a group whose timing the budget's rest cannot hold (predicted from the most
    similar group timed) is not timed but costed as that group; the first of each kind is
    timed whatever the budget, at the least sizes. `fit_points`: the largest sample the
    metrics and probes are timed at. `progress` hears each measurement. `cache`: timings of
    earlier plans on this machine (`raystudy.plan.cache`), read unless `recalibrate`, and
    written with every new timing. `measured`: the study's own finished runs (from
    `measured_from`), whose phase timings cost the kinds they ran; when they cover every kind
    nothing is calibrated."""
    # Caught here too for callers other than the CLI: 0 steps would time nothing.
    if calibration_steps is not None and calibration_steps < 1:
        raise ValueError(f"calibration_steps must be at least 1, got {calibration_steps}")
    if not cluster_cpus > 0 or cluster_gpus < 0:
        raise ValueError(
            f"a cluster needs CPUs > 0 and GPUs >= 0, got {cluster_cpus:g} and {cluster_gpus:g}"
        )
    trials = spec.trials() if spec.search.method != "optuna" else []
    n = spec.num_trials()
    cpu, gpu = spec.resources.cpu, spec.resources.gpu if cluster_gpus else 0.0
    by_cpu = math.floor(cluster_cpus / cpu) if cpu else n
    by_gpu = math.floor(cluster_gpus / gpu) if gpu else by_cpu
    plan = Plan(
        num_trials=n,
        cpu=cpu,
        gpu=gpu,
        cluster_cpus=cluster_cpus,
        cluster_gpus=cluster_gpus,
        concurrent=max(0, min(by_cpu, by_gpu, n)),
        trials_per_gpu=math.floor(1 / gpu) if gpu else None,
        gpus_asked=gpu > 0,
        threads=max(1, int(cpu)),
    )
    if not trials:
        return plan
    calibration = Calibration(
        plan, trials, calibration_steps, max_groups, budget_s, fit_points, progress
    )
    calibration.cache, calibration.recalibrate = cache, recalibrate
    plan.measured = measured_kinds(trials, calibration.trial_kinds, measured)
    plan.measured_from = measured_from if plan.measured else None
    if set(plan.measured) < set(plan.kinds):
        calibration.run()
    return plan
