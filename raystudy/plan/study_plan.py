"""`raystudy plan` from Python: a study file's plan (`make_plan`), made as the command makes it
(this machine's timings cached for the next plan, the calibration kept within the command's
budget) and returned as the text it prints."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from raystudy.checks import load_spec
from raystudy.plan.cache import CalibrationCache, default_path
from raystudy.plan.calibrate import Progress, calibration_budget
from raystudy.plan.estimate import make_plan
from raystudy.plan.gpu import gpu_breakdown
from raystudy.plan.report import format_plan, plan_data
from raystudy.plan.result import MeasuredRun
from raystudy.spec import OptionError


def plan_study(
    spec: str | Path,
    overrides: Sequence[str] | None = None,
    *,
    cpus: float | None = None,
    gpus: float = 0.0,
    calibrate: bool = True,
    steps: int = 3,
    budget: float = 60.0,
    recalibrate: bool = False,
    progress: Progress | None = None,
    measured: Callable[[str], tuple[list[MeasuredRun], str]] | None = None,
    as_json: bool = False,
    gpu_speedup: Sequence[str] = (),
) -> str:
    """The plan of the study in `spec` (with `--set` `overrides`) on a cluster of `cpus`
    (default: this machine's) and `gpus`, timed `steps` training steps per batch size when
    `calibrate`, the whole within `budget` seconds of this process's start. OptionError for
    a cluster that cannot be, SpecError for a spec that does not validate. `measured`: the
    finished runs of a study of that name and where they were read (none when it has not
    run), whose phase timings cost the kinds they ran (`make_plan`). `as_json`: the plan as
    JSON (`plan_data`) instead of text. `gpu_speedup`: "training=X" or "probes=X", a GPU's
    speed-up over this machine's timing in place of the assumed one (`raystudy.plan.gpu`)."""
    # A cluster needs at least some CPU (min=0 would let 0 through), and a finite count.
    if cpus is not None and not (cpus > 0 and math.isfinite(cpus)):
        raise OptionError(
            f"--cpus: must be a number greater than 0 (the cluster's CPUs), got {cpus:g}"
        )
    if not math.isfinite(gpus):
        raise OptionError(f"--gpus: must be a finite number of GPUs (0 or more), got {gpus:g}")
    speedups = gpu_speedups(gpu_speedup)
    study_spec = load_spec(spec, overrides or ())
    runs, where = measured(study_spec.name) if measured is not None else ([], None)
    result = make_plan(
        study_spec,
        cpus if cpus is not None else float(os.cpu_count() or 1),
        gpus,
        calibration_steps=steps if calibrate else None,
        budget_s=calibration_budget(budget),
        progress=progress,
        cache=CalibrationCache(default_path()),
        recalibrate=recalibrate,
        measured=runs,
        measured_from=where,
    )
    gpu_part = gpu_breakdown(result, **speedups)
    if as_json:
        return json.dumps(plan_data(result, study_spec.name, gpu_part))
    return format_plan(result, study_spec.name, gpu_part)


def gpu_speedups(given: Sequence[str]) -> dict[str, float]:
    """`--gpu-speedup training=30 --gpu-speedup probes=8` as keyword arguments of
    `gpu_breakdown`; OptionError for anything else."""
    out: dict[str, float] = {}
    for item in given:
        part, _, value = item.partition("=")
        try:
            factor = float(value)
        except ValueError:
            factor = float("nan")
        if part not in ("training", "probes") or not (factor > 0 and math.isfinite(factor)):
            raise OptionError(
                f"--gpu-speedup: expected training=X or probes=X with X > 0 (how many times "
                f"faster one GPU runs that part than this machine), got {item!r}"
            )
        out[part] = factor
    return out
