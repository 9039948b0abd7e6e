"""`raystudy plan` on a GPU cluster: GPU-hours of training and scoring, CPU-hours of the
metrics beside the GPUs, which bounds the study, and which figures are assumed."""

from __future__ import annotations

from collections import Counter

import pytest

from raystudy.plan import Plan
from raystudy.plan.extrapolate import TrialCost
from raystudy.plan.gpu import (
    ASSUMED_PROBE_SPEEDUP,
    ASSUMED_TRAINING_SPEEDUP,
    gpu_breakdown,
    gpu_lines,
)
from raystudy.plan.report import format_plan, plan_data
from raystudy.plan.study_plan import gpu_speedups
from raystudy.spec import OptionError


def a_plan(device: str = "CPU", cpus: float = 64, gpus: float = 8) -> Plan:
    plan = Plan(
        num_trials=30, cpu=2, gpu=0.25, cluster_cpus=cpus, cluster_gpus=gpus,
        concurrent=30, trials_per_gpu=4, gpus_asked=True,
    )  # fmt: skip
    plan.kinds = Counter({"small": 20, "large": 10})
    plan.costs = {
        "small": TrialCost(3000.0, 200.0, 100.0, fitting=900.0, probe_fitting=600.0),
        "large": TrialCost(9000.0, 400.0, 200.0, fitting=1500.0, probe_fitting=800.0),
    }
    plan.device = device
    return plan


def test_each_part_goes_where_a_gpu_trial_runs_it():
    b = gpu_breakdown(a_plan())
    assert b is not None
    # Training, rendering, encoding and eval/* on the GPU at the assumed speed-up; the probes'
    # fits on the GPU at theirs; the metrics' fits (fitting less the probes) on the CPUs.
    train = (20 * 3300 + 10 * 9600) / ASSUMED_TRAINING_SPEEDUP / 3600
    probes = (20 * 600 + 10 * 800) / ASSUMED_PROBE_SPEEDUP / 3600
    cpu = (20 * 300 + 10 * 700) / 3600
    assert b.gpu_hours_training == pytest.approx(train)
    assert b.gpu_hours_scoring == pytest.approx(probes)
    assert b.cpu_hours == pytest.approx(cpu)
    assert b.cpus_per_gpu == 8
    assert b.wall_hours == pytest.approx(max((train + probes) / 8, cpu / 64))
    assert b.bound == ("GPU" if (train + probes) / 8 >= cpu / 64 else "CPU")
    assert not b.training.measured and not b.probes.measured


def test_few_cpus_beside_the_gpus_make_the_cpus_bound_it():
    b = gpu_breakdown(a_plan(cpus=1, gpus=8))
    assert b is not None and b.bound == "CPU"
    assert b.wall_hours == pytest.approx(b.cpu_hours)
    assert "bound by the CPUs" in "\n".join(gpu_lines(b))


def test_given_and_measured_speedups_replace_the_assumed_ones():
    b = gpu_breakdown(a_plan(), training=100.0, probes=2.0)
    assert b is not None and b.training.factor == 100 and b.probes.factor == 2
    assert b.training.basis == "given"
    on_gpu = gpu_breakdown(a_plan(device="NVIDIA H100 80GB HBM3"))
    assert on_gpu is not None and on_gpu.training.measured and on_gpu.training.factor == 1
    text = "\n".join(gpu_lines(on_gpu))
    assert "training 1x this machine's timing (measured" in text
    assert f"probes {ASSUMED_PROBE_SPEEDUP:g}x (not measured" in text


def test_no_breakdown_without_gpus_or_costs():
    assert gpu_breakdown(a_plan(gpus=0)) is None
    plan = a_plan()
    plan.gpu = 0.0  # trials that ask no GPU run on CPUs
    assert gpu_breakdown(plan) is None
    plan = a_plan()
    plan.costs = {}
    assert gpu_breakdown(plan) is None


def test_the_plan_prints_and_serialises_the_breakdown():
    plan = a_plan()
    b = gpu_breakdown(plan)
    text = format_plan(plan, "s", b)
    assert "GPU-hours: training" in text and "assumptions: training 30x" in text
    data = plan_data(plan, "s", b)["gpu_cluster"]
    assert data["bound"] == b.bound and data["speedups"]["probes"]["measured"] is False
    assert plan_data(plan, "s")["gpu_cluster"] is None


@pytest.mark.parametrize("bad", ["training", "probes=0", "probes=x", "decoder=3", "training=inf"])
def test_a_speedup_option_that_cannot_be_read_is_refused(bad: str):
    with pytest.raises(OptionError, match="--gpu-speedup: expected training=X or probes=X"):
        gpu_speedups([bad])
    assert gpu_speedups(["training=12", "probes=3.5"]) == {"training": 12.0, "probes": 3.5}
