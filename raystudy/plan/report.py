"""A plan as text: the placement, the cost per kind of trial, and how it was measured."""

from __future__ import annotations

from typing import Any

from raystudy.plan.gpu import GpuBreakdown, gpu_lines
from raystudy.plan.result import Plan

#: Kinds listed one per line; the rest are summed in one line.
SHOWN_KINDS = 12

HOW = (
    "  how: seconds per training step from a few steps after a warm-up step at two batch "
    "sizes, a line in the batch size; the evaluation from its parts: rendering + encoding "
    "and eval/* timed on a few dozen images (per-image line), the metrics' and one probe "
    "scenario's fits timed on stand-in codes at two fractions of the sample sizes and "
    "extrapolated linearly to all of them (fits growing like n log n come out ~1.3x low at "
    "10,000 points), every scenario costed as the one timed, the intervention metrics timed "
    "once; groups the budget left untimed costed as the most similar group timed"
)


def device_note(plan: Plan) -> str:
    """What the figures were timed on, and how they read where the trials will run."""
    where = f"timed on this machine's {plan.device} with {plan.timed_threads} thread(s)"
    if plan.timed_threads < plan.threads:
        where += (
            f" (the CPUs were busy; a trial's {plan.threads} threads on CPUs of its own "
            f"may be up to {plan.threads}x faster, so read these as upper bounds)"
        )
    if plan.gpus_asked and plan.device == "CPU":
        return (
            f"{where}; the study asks for GPUs, where these models train several times "
            "faster, so read these as CPU figures, not GPU ones"
        )
    if plan.gpus_asked and plan.trials_per_gpu and plan.trials_per_gpu > 1:
        return (
            f"{where}, one trial alone on it; {plan.trials_per_gpu} trials share a GPU in "
            "the study and each may run slower"
        )
    return where


def _cached(plan: Plan, group: object) -> str:
    taken = plan.cached.get(str(group))
    return f" (cached from {taken})" if taken else ""


def format_plan(plan: Plan, name: str, gpu: GpuBreakdown | None = None) -> str:
    lines = [f"Study {name!r}: {plan.num_trials} trials"]
    lines.append(
        f"  each trial asks for {plan.cpu:g} CPU"
        + (f" and {plan.gpu:g} GPU" if plan.gpu else "")
        + (f" ({plan.trials_per_gpu} trials share a GPU)" if plan.trials_per_gpu else "")
    )
    lines.append(
        f"  on {plan.cluster_cpus:g} CPUs / {plan.cluster_gpus:g} GPUs: "
        f"{plan.concurrent} trials at once"
    )
    if plan.kinds:
        lines.append(
            "  trial kinds (objective/architecture/dataset/batch, split/code width, steps):"
        )
        ranked = plan.kinds.most_common()
        for kind, count in ranked[:SHOWN_KINDS]:
            cost = plan.costs.get(kind)
            text = (
                f"  ~{cost.seconds:,.0f} s per trial (training {cost.training:,.0f} s, "
                f"encoding {cost.encoding:,.0f} s, eval/* {cost.reconstruction:,.0f} s, "
                f"fits {cost.fitting:,.0f} s)"
                if cost is not None
                else ""
            )
            lines.append(f"    {count:5d} x {kind}{text}")
            seen = plan.measured.get(kind)
            if seen is not None:
                lines.append(
                    f"            measured: {seen.seconds:,.0f} s per trial (training "
                    f"{seen.training:,.0f} s, the rest {seen.seconds - seen.training:,.0f} s) "
                    f"in {seen.runs} finished run(s) of the study"
                )
        if len(ranked) > SHOWN_KINDS:
            rest = ranked[SHOWN_KINDS:]
            lines.append(f"    {sum(n for _, n in rest):5d} trials of {len(rest)} more kinds")
    if plan.device is not None:
        lines.append(
            f"  calibrated in {plan.calibration_seconds:.0f} s (budget {plan.budget_s:.0f} s):"
        )
        for group, t in plan.training.items():
            small, large = (s.batch_size for s in t.timings)
            lines.append(
                f"    training {group}: {t.seconds_per_step:.3g} s/step "
                f"(timed at batch {small} and {large}); encoding {t.encode.slope * 1000:.2g} "
                f"ms/image, eval/* {t.recon.slope * 1000:.2g} ms/image{_cached(plan, group)}"
            )
        for group, f in plan.evaluation.items():
            low, high = f.scales
            lines.append(
                f"    evaluation {group}: fits {f.fit.at(1.0):,.1f} s and "
                f"{f.images.at(1.0):,.0f} images to encode at full size (timed at "
                f"{low:.3g} and {high:.3g} of the sample sizes, 1 of {f.scenarios} probe "
                f"scenario(s)){_cached(plan, group)}"
            )
        for group, source in plan.costed_from.items():
            why = plan.not_timed.get(group, "not calibrated")
            lines.append(f"    {group}: not timed ({why}), costed as {source}")
        lines.append(HOW)
        lines.append(f"  {device_note(plan)}")
    if plan.costs:
        hours = plan.total_trial_hours
        resource = "GPU" if plan.gpu else "CPU"
        share = plan.gpu if plan.gpu else plan.cpu
        lines.append(
            f"  estimate: {hours:.1f} trial-hours = {hours * share:.1f} {resource}-hours; "
            f"~{plan.wall_hours:.1f} h wall with {plan.concurrent} at once"
        )
    measured = plan.measured_trial_hours if plan.measured else None
    if measured is not None:
        resource = "GPU" if plan.gpu else "CPU"
        share = plan.gpu if plan.gpu else plan.cpu
        which = (
            "every kind"
            if set(plan.measured) >= set(plan.kinds)
            else f"{len(plan.measured)} of {len(plan.kinds)} kinds, the rest calibrated"
        )
        lines.append(
            f"  from the study's measured runs ({which}; {plan.measured_from}): "
            f"{measured:.1f} trial-hours = {measured * share:.1f} {resource}-hours; "
            f"~{measured / max(1, plan.concurrent):.1f} h wall with {plan.concurrent} at once"
        )
    if gpu is not None:
        lines += gpu_lines(gpu)
    return "\n".join(lines)


def plan_data(plan: Plan, name: str, gpu: GpuBreakdown | None = None) -> dict[str, Any]:
    """`format_plan`'s numbers as JSON-ready data (`raystudy plan --json`): the placement,
    each kind of trial with its count and estimated seconds by part (and the study's own
    measured seconds where its runs timed that kind), the totals, and how it was measured."""
    kinds = []
    for kind, count in plan.kinds.most_common():
        cost = plan.costs.get(kind)
        measured = plan.measured.get(kind)
        kinds.append(
            {
                "kind": kind,
                "trials": count,
                "seconds": None if cost is None else cost.seconds,
                "parts": None
                if cost is None
                else {
                    "training": cost.training,
                    "encoding": cost.encoding,
                    "reconstruction": cost.reconstruction,
                    "fitting": cost.fitting,
                    "probe_fitting": cost.probe_fitting,
                },
                "measured_seconds": None if measured is None else measured.seconds,
                "measured_runs": None if measured is None else measured.runs,
            }
        )
    gpu_data = None
    if gpu is not None:
        gpu_data = {
            "gpu_hours_training": gpu.gpu_hours_training,
            "gpu_hours_scoring": gpu.gpu_hours_scoring,
            "cpu_hours": gpu.cpu_hours,
            "cpus_per_gpu": gpu.cpus_per_gpu,
            "bound": gpu.bound,
            "wall_hours": gpu.wall_hours,
            "speedups": {
                part: {"factor": s.factor, "measured": s.measured, "basis": s.basis}
                for part, s in (("training", gpu.training), ("probes", gpu.probes))
            },
        }
    return {
        "gpu_cluster": gpu_data,
        "study": name,
        "trials": plan.num_trials,
        "per_trial": {"cpu": plan.cpu, "gpu": plan.gpu},
        "cluster": {"cpus": plan.cluster_cpus, "gpus": plan.cluster_gpus},
        "concurrent": plan.concurrent,
        "trials_per_gpu": plan.trials_per_gpu,
        "kinds": kinds,
        "trial_hours": plan.total_trial_hours if plan.costs else None,
        "wall_hours": plan.wall_hours if plan.costs else None,
        "measured_trial_hours": plan.measured_trial_hours,
        "measured_from": plan.measured_from,
        "calibration": {
            "device": plan.device,
            "seconds": plan.calibration_seconds,
            "budget_s": plan.budget_s,
            "not_timed": dict(plan.not_timed),
            "costed_from": dict(plan.costed_from),
            "cached": dict(plan.cached),
        },
    }
