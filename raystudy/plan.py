"""How big a study is and what it will cost, before running it.

`make_plan` counts trials, fits them onto a cluster (trials per GPU, trials at once), and
estimates CPU/GPU hours from a calibration: a few training steps and one evaluation of each
distinct model kind in the study, timed in this process on this machine.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch

from raystudy.data import get_dataset
from raystudy.models.factory import build
from raystudy.scoring import build_split, score_model
from raystudy.spec import StudySpec, TrialConfig
from raystudy.training.loop import train


@dataclass(frozen=True)
class Calibration:
    kind: str
    seconds_per_step: float
    eval_seconds: float


@dataclass
class Plan:
    num_trials: int
    cpu: float
    gpu: float
    cluster_cpus: float
    cluster_gpus: float
    concurrent: int
    trials_per_gpu: int | None
    trial_seconds: dict[str, float] = field(default_factory=dict)
    kinds: Counter[str] = field(default_factory=Counter)
    calibrations: list[Calibration] = field(default_factory=list)

    @property
    def total_trial_hours(self) -> float:
        return sum(self.trial_seconds[k] * n for k, n in self.kinds.items()) / 3600

    @property
    def wall_hours(self) -> float:
        return self.total_trial_hours / max(1, self.concurrent)


def kind_of(config: TrialConfig) -> str:
    """What drives a trial's cost: objective, architecture, batch and its evaluation."""
    m, t = config.model, config.train
    return f"{m.objective}/{m.architecture}/z{m.latent_dim}/b{t.batch_size}/{t.steps}steps"


def calibrate(config: TrialConfig, steps: int = 10, threads: int = 1) -> Calibration:
    """Time `steps` training steps (after a two-step warm-up run) and one full evaluation."""
    torch.set_num_threads(threads)
    device = torch.device("cpu")
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    model, objective = build(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    warm = config.train.model_copy(update={"steps": 2, "report_every": 2})
    train(model, objective, dataset, split, warm, seed=0, device=device)
    timed = config.train.model_copy(update={"steps": steps, "report_every": steps})
    started = time.perf_counter()
    train(model, objective, dataset, split, timed, seed=0, device=device)
    per_step = (time.perf_counter() - started) / steps
    started = time.perf_counter()
    score_model(model, dataset, split, config, device, n_jobs=threads)
    return Calibration(kind_of(config), per_step, time.perf_counter() - started)


def make_plan(
    spec: StudySpec,
    cluster_cpus: float,
    cluster_gpus: float = 0.0,
    calibration_steps: int | None = 10,
    max_kinds: int = 8,
) -> Plan:
    # Caught here too for callers other than the CLI: 0 steps would divide by zero below.
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
    )
    if not trials:
        return plan
    plan.kinds = Counter(kind_of(t) for t in trials)
    if calibration_steps is None:
        return plan
    examples = {}
    for t in trials:
        examples.setdefault(kind_of(t), t)
    kinds = list(examples)[:max_kinds]
    for kind in kinds:
        cal = calibrate(examples[kind], calibration_steps, threads=max(1, int(cpu)))
        plan.calibrations.append(cal)
        plan.trial_seconds[kind] = examples[kind].train.steps * cal.seconds_per_step + (
            cal.eval_seconds
        )
    # Kinds beyond the calibrated ones are costed like the mean calibrated kind.
    mean = float(np.mean(list(plan.trial_seconds.values())))
    for kind in plan.kinds:
        plan.trial_seconds.setdefault(kind, mean)
    return plan


def format_plan(plan: Plan, name: str) -> str:
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
        lines.append("  trial kinds (objective/architecture/latent/batch/steps):")
        for kind, count in plan.kinds.most_common():
            secs = plan.trial_seconds.get(kind)
            cost = f"~{secs:.0f} s per trial on this CPU" if secs is not None else ""
            lines.append(f"    {count:5d} x {kind}  {cost}")
    for cal in plan.calibrations:
        lines.append(
            f"  calibrated {cal.kind}: {cal.seconds_per_step * 1000:.0f} ms/step, "
            f"evaluation {cal.eval_seconds:.1f} s"
        )
    if plan.trial_seconds:
        hours = plan.total_trial_hours
        resource = "GPU" if plan.gpu else "CPU"
        share = plan.gpu if plan.gpu else plan.cpu
        lines.append(
            f"  estimate: {hours:.1f} trial-hours = {hours * share:.1f} {resource}-hours; "
            f"~{plan.wall_hours:.1f} h wall with {plan.concurrent} at once "
            "(timed on this machine's CPU; a GPU trains these models several times faster)"
        )
    return "\n".join(lines)
