"""Where a GPU study's time goes: GPU-hours of training and of scoring, CPU-hours of the
metrics left on the CPUs beside each GPU, and which of the two bounds the study.

A trial on a GPU node trains there, renders and encodes its images there, and fits its
probes there (`evaluation.device` auto: the MLP probe's batched twin and xgboost's GPU
trees); the disentanglement metrics (DCI, MIG, SAP, modularity, the GBT accuracies, the
intervention metrics) fit on its CPUs (docs/performance/scoring.md says why). With G GPUs and
C CPUs the study takes at least

    max(GPU-hours / G, CPU-hours / C),

the GPU side counting whole-GPU seconds (trials sharing a GPU split it), the CPU side every
trial's metric fits. Each figure is a calibration (this machine's, `raystudy.plan.calibrate`)
divided by a speed-up where the calibration did not run on a GPU; every speed-up is printed
as measured or assumed, and the assumed ones can be given (`raystudy plan --gpu-speedup`).
"""

from __future__ import annotations

from dataclasses import dataclass

from raystudy.plan.result import Plan

#: Assumed where this machine has no GPU: training steps (and rendering, encoding) of these
#: conv and ResNet VAEs on one GPU against one thread here. Not measured: no GPU has timed
#: raystudy's models yet; replace it with a measured figure (`--gpu-speedup training=X`).
ASSUMED_TRAINING_SPEEDUP = 30.0
#: Assumed likewise for the probes: the batched torch MLP (launch-bound at these sizes) and
#: xgboost's GPU trees against scikit-learn's MLP and xgboost on one thread here.
ASSUMED_PROBE_SPEEDUP = 10.0


@dataclass(frozen=True)
class Speedup:
    """How many times faster one GPU runs a part than the calibration did, and whether that
    was measured (the calibration ran on a GPU) or assumed."""

    factor: float
    measured: bool
    basis: str


@dataclass(frozen=True)
class GpuBreakdown:
    gpu_hours_training: float  # whole-GPU hours: training, rendering, encoding, eval/*
    gpu_hours_scoring: float  # whole-GPU hours: the probes' fits
    cpu_hours: float  # the metrics' fits, on the CPUs beside the GPUs
    gpus: float
    cpus: float
    training: Speedup
    probes: Speedup

    @property
    def gpu_hours(self) -> float:
        return self.gpu_hours_training + self.gpu_hours_scoring

    @property
    def cpus_per_gpu(self) -> float:
        return self.cpus / self.gpus

    @property
    def gpu_wall_hours(self) -> float:
        return self.gpu_hours / self.gpus

    @property
    def cpu_wall_hours(self) -> float:
        return self.cpu_hours / self.cpus

    @property
    def bound(self) -> str:
        """ "GPU" or "CPU": the side whose work takes longer."""
        return "GPU" if self.gpu_wall_hours >= self.cpu_wall_hours else "CPU"

    @property
    def wall_hours(self) -> float:
        return max(self.gpu_wall_hours, self.cpu_wall_hours)


def gpu_breakdown(
    plan: Plan, training: float | None = None, probes: float | None = None
) -> GpuBreakdown | None:
    """The breakdown of a calibrated plan on its cluster's GPUs (None when its trials ask no
    GPU, the cluster has none, or nothing was costed); `training` and `probes` are speed-ups
    given in place of the assumed ones (a calibration on a GPU measured training's: 1)."""
    if not (plan.gpu and plan.cluster_gpus and plan.costs):
        return None
    on_gpu = plan.device is not None and plan.device != "CPU"
    train = (
        Speedup(1.0, True, f"timed on this machine's {plan.device}")
        if on_gpu and training is None
        else Speedup(training, False, "given")
        if training is not None
        else Speedup(ASSUMED_TRAINING_SPEEDUP, False, "assumed: no GPU timing of these models")
    )
    fit = (
        Speedup(probes, False, "given")
        if probes is not None
        else Speedup(ASSUMED_PROBE_SPEEDUP, False, "assumed: no GPU timing of the probes")
    )
    gpu_train = gpu_fit = cpu = 0.0
    for kind, n in plan.kinds.items():
        cost = plan.costs.get(kind)
        if cost is None:
            continue
        gpu_train += n * (cost.training + cost.encoding + cost.reconstruction) / train.factor
        gpu_fit += n * cost.probe_fitting / fit.factor
        # The fits are timed on one thread, as a trial's metrics fit (n_jobs 1 per metric).
        cpu += n * (cost.fitting - cost.probe_fitting)
    return GpuBreakdown(
        gpu_train / 3600, gpu_fit / 3600, cpu / 3600, plan.cluster_gpus, plan.cluster_cpus,
        train, fit,
    )  # fmt: skip


def gpu_lines(b: GpuBreakdown) -> list[str]:
    """The breakdown as the lines `raystudy plan` prints."""
    per_gpu = b.cpu_hours / b.gpus
    return [
        f"  on {b.gpus:g} GPUs with {b.cpus:g} CPUs ({b.cpus_per_gpu:.3g} beside each GPU):",
        f"    GPU-hours: training {b.gpu_hours_training:,.1f} (training, rendering, encoding, "
        f"eval/*), scoring {b.gpu_hours_scoring:,.1f} (the probes' fits)",
        f"    CPU-hours: {b.cpu_hours:,.1f} (the metrics' fits), {per_gpu:,.1f} for the "
        f"{b.cpus_per_gpu:.3g} CPUs beside each GPU",
        f"    bound by the {b.bound}s: ~{b.wall_hours:,.1f} h wall (GPUs "
        f"{b.gpu_wall_hours:,.1f} h, CPUs {b.cpu_wall_hours:,.1f} h)",
        f"    assumptions: training {b.training.factor:g}x this machine's timing "
        f"({'measured' if b.training.measured else 'not measured'}: {b.training.basis}); "
        f"probes {b.probes.factor:g}x ({'measured' if b.probes.measured else 'not measured'}"
        f": {b.probes.basis}); the metrics' CPU-seconds as timed here; a GPU's trials "
        "packed back to back",
    ]
