"""`raystudy plan` (trial count, placement, calibrated cost) and `raystudy ui` (a real server)."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from tiny import ROOT, SMOKE, tiny
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.plan import Line, Plan, format_plan, make_plan, scaled_evaluation, trial_cost
from raystudy.plan.cache import CalibrationCache, cache_key
from raystudy.plan.gpu import gpu_breakdown
from raystudy.spec import EvaluationConfig


def test_plan_places_trials_and_calibrates_each_group() -> None:
    # Steps as a grid axis: kinds that differ in steps alone share their calibration.
    steps = "grid.train={steps: [8, 80]}"
    overrides = [o for o in tiny("plan", "evaluation.metrics=[mig]", steps) if "steps=" not in o]
    spec = load_spec(SMOKE, overrides)
    lines: list[str] = []
    plan = make_plan(
        spec, cluster_cpus=8, cluster_gpus=1, calibration_steps=2, progress=lines.append
    )
    assert plan.num_trials == 8
    assert plan.trials_per_gpu == 4  # gpu 0.25
    assert plan.concurrent == 4  # the one GPU bounds it, not the 8 CPUs
    assert set(plan.kinds.values()) == {2} and len(plan.kinds) == 4  # 2 objectives x 2 steps
    # Two training groups (the objectives), one evaluation group (same data, split, code).
    assert {g.objective for g in plan.training} == {"beta_vae", "ada_gvae"}
    assert len(plan.evaluation) == 1 and not plan.costed_from
    # A progress line per measurement, as it happened: two batch sizes and the per-image
    # timings for the first group, the fits, then the second group's two batch sizes.
    assert len(lines) == 6 and lines[0].startswith("calibrating 1/3 ")
    assert "batch 1 on CPU" in lines[0] and "s/step at batch 8" in lines[1]
    assert "metrics and 1 of 5 probe scenario(s) at" in lines[3]
    assert "calibrating 3/3 ada_gvae" in lines[4]
    # One scenario's probes timed, five costed: the images to encode are a count, exact.
    (fits,) = plan.evaluation.values()
    assert fits.scenarios == 5 and fits.images.at(1.0) == pytest.approx((120 + 60) + 5 * (80 + 40))
    for kind, cost in plan.costs.items():
        assert cost.training > 0 and cost.encoding > 0 and cost.fitting > 0, kind
        assert cost.reconstruction > 0  # num_eval_images=32
    # Training scales with steps, the evaluation does not.
    for group, timing in plan.training.items():
        short, long = (plan.costs[f"{group}, dittadi_hues/z4, {n} steps"] for n in (8, 80))
        assert short.training == pytest.approx(8 * timing.seconds_per_step)
        assert long.training == pytest.approx(10 * short.training)
        assert long.seconds - long.training == pytest.approx(short.seconds - short.training)
    expected = sum(plan.trial_seconds[k] * n for k, n in plan.kinds.items()) / 3600
    assert plan.total_trial_hours == expected and plan.wall_hours == expected / 4
    # The probes' fits timed apart from the metrics': what a GPU trial fits on its GPU.
    for cost in plan.costs.values():
        assert 0 < cost.probe_fitting < cost.fitting
    gpu = gpu_breakdown(plan)
    assert gpu is not None and gpu.cpu_hours == pytest.approx(
        sum((c.fitting - c.probe_fitting) * plan.kinds[k] for k, c in plan.costs.items()) / 3600
    )
    text = format_plan(plan, "plan")
    assert "8 trials" in text and "4 trials at once" in text and "4 trials share a GPU" in text
    if not torch.cuda.is_available():  # CI: the study asks for GPUs, none here
        assert plan.device == "CPU"
        assert "the study asks for GPUs" in text and "not GPU ones" in text
    # No GPUs on the cluster: CPU figures, and nothing said of GPUs.
    on_cpus = format_plan(dataclasses.replace(plan, gpus_asked=False, gpu=0.0), "plan")
    assert "timed on this machine's CPU" in on_cpus and "GPU" not in on_cpus.split("how:")[1]

    # A budget spent by the first groups: the first of each kind is timed all the same, the
    # next training group is costed as the one timed, and the progress and the plan say so.
    lines.clear()
    cut = make_plan(spec, 8, 1, calibration_steps=1, budget_s=0.01, progress=lines.append)
    assert [g.objective for g in cut.training] == ["beta_vae"] and len(cut.evaluation) == 1
    skipped = "ada_gvae/conv/color_dsprites/b8"
    assert cut.costed_from == {skipped: "beta_vae/conv/color_dsprites/b8"}
    assert "time budget" in cut.not_timed[skipped] and "of 0 s left" in cut.not_timed[skipped]
    assert (
        lines[-1].startswith("calibrating 3/3 ada_gvae") and "not timed (time budget" in lines[-1]
    )
    cut_text = format_plan(cut, "plan")
    assert f"{skipped}: not timed (time budget: ~" in cut_text
    assert "costed as beta_vae/conv/color_dsprites/b8" in cut_text
    beta, ada = (k for k in cut.kinds if k.endswith("8 steps"))
    assert cut.costs[beta] == cut.costs[ada]  # the same timings, the same figures

    cpu_only = make_plan(spec, cluster_cpus=3, cluster_gpus=0, calibration_steps=None)
    assert cpu_only.concurrent == 3 and cpu_only.gpu == 0 and not cpu_only.training
    assert not cpu_only.costs and sum(cpu_only.kinds.values()) == 8


def test_a_second_plan_reads_its_timings_from_the_cache(tmp_path: Path) -> None:
    spec = load_spec(SMOKE, tiny("plan", "evaluation.metrics=[mig]"))
    path = tmp_path / "raystudy" / "plan-calibration.json"
    lines: list[str] = []

    def plan_with(cache: CalibrationCache, **options: bool) -> Plan:
        lines.clear()
        return make_plan(
            spec, 8, 0, 1, budget_s=0.01, progress=lines.append, cache=cache, **options
        )

    first = plan_with(CalibrationCache(path))  # a miss: timed, and stored
    assert path.exists() and not first.cached and not any("cached" in line for line in lines)
    again = plan_with(CalibrationCache(path))  # a new process's read of the same file
    assert set(again.cached) == {str(g) for g in [*first.training, *first.evaluation]}
    assert again.costs == first.costs and again.training == first.training
    assert sum("cached from 20" in line for line in lines) == 2
    assert format_plan(again, "plan").count("(cached from 20") == 2
    # --recalibrate: timed afresh, and the fresh timings stored in place of the old ones.
    fresh = plan_with(CalibrationCache(path), recalibrate=True)
    assert not fresh.cached and fresh.training != first.training
    assert plan_with(CalibrationCache(path)).training == fresh.training
    # Another machine's threads, device or method: another key, so a miss.
    other = CalibrationCache(path)
    (group,) = fresh.evaluation
    assert other.get(cache_key(group, "CPU", 2, "1 steps, 200 fit points")) is None
    assert other.get(cache_key(group, "CPU", 1, "1 steps, 200 fit points")) is not None
    # A file that is not a cache is ignored (it only saves time), then overwritten.
    path.write_text("not json")
    assert not plan_with(CalibrationCache(path)).cached and CalibrationCache(path).entries


def test_extrapolation_by_hand() -> None:
    # 0.10 s/step at batch 8, 0.25 at batch 32: 0.05 fixed + 0.00625 per image; at 64, 0.45.
    step = Line.through(8, 0.10, 32, 0.25)
    assert step.intercept == pytest.approx(0.05) and step.slope == pytest.approx(0.00625)
    assert step.at(64) == pytest.approx(0.45)
    # Noise made the larger run faster: flat at the larger timing, never falling.
    assert Line.through(1, 3.0, 2, 2.0) == Line(3.0, 0.0)
    with pytest.raises(ValueError, match="x1 < x2"):
        Line.through(2, 1.0, 2, 1.0)
    # Fits: 2 s at 1/20 of the sizes, 5 s at 1/5 -> 2 + (5-2)/(0.2-0.05) * (1-0.05) = 21 s.
    fit = Line.through(0.05, 2.0, 0.2, 5.0)
    # 10,000 pool images + 30,000 per unit of scale; encoding 1 ms/image + 0.5 s.
    cost = trial_cost(
        steps=1000,
        batch_size=64,
        step_line=step,
        encode_line=Line(0.5, 0.001),
        recon_line=Line(0.1, 0.002),
        num_eval_images=500,
        fit_line=fit,
        images_line=Line(10_000, 30_000),
    )
    assert cost.training == pytest.approx(450.0)
    assert cost.encoding == pytest.approx(0.5 + 40.0)
    assert cost.reconstruction == pytest.approx(1.1)
    assert cost.fitting == pytest.approx(21.0)
    assert cost.seconds == pytest.approx(450 + 40.5 + 1.1 + 21)
    # No eval images, no images to encode (gt_decoder): those parts cost nothing.
    none = trial_cost(10, 8, step, Line(0.5, 0.001), Line(0.1, 0.002), 0, fit, Line.zero())
    assert none.encoding == 0 and none.reconstruction == 0

    ev = EvaluationConfig(num_train=1000, num_test=500, probe_train=300, probe_test=100)
    small = scaled_evaluation(ev, 0.05)
    assert (small.num_train, small.num_test, small.probe_train, small.probe_test) == (
        50,
        25,
        20,  # 15, raised to the field's minimum
        10,  # 5, raised to the field's minimum
    )
    assert small.num_eval_images == 50 and small.metrics == ev.metrics
    assert scaled_evaluation(ev.model_copy(update={"num_eval_images": 0}), 0.5).num_eval_images == 0


def test_plan_command_without_calibration() -> None:
    result = CliRunner().invoke(
        app, ["plan", str(SMOKE), "--no-calibrate", "--cpus", "16", "--gpus", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "8 trials" in result.output and "8 trials at once" in result.output
    assert "calibrating" not in result.output and "estimate:" not in result.output
    as_json = CliRunner().invoke(
        app, ["plan", str(SMOKE), "--no-calibrate", "--cpus", "16", "--gpus", "2", "--json"]
    )
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert data["study"] == "smoke" and data["trials"] == 8 and data["concurrent"] == 8
    assert sum(k["trials"] for k in data["kinds"]) == 8
    assert data["trial_hours"] is None  # nothing calibrated, nothing estimated


SHIPPED = sorted((ROOT / "search_spaces").glob("*.yaml"))


@pytest.mark.heavy
@pytest.mark.parametrize("spec", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_plan_of_every_shipped_study_ends_within_its_budget(spec: Path, tmp_path: Path) -> None:
    """`raystudy plan` as a user runs it, a process of its own (its imports count against its
    budget), GPUs on the cluster as the big studies expect, and no cached timings. A budget
    of 20 s (the default is 60): the first group of each kind is timed whatever the budget,
    so this is the least a plan takes (11-45 s a study alone here, 2026-12-07). What is held
    to the limit is the CPU time the plan spent, not its wall time: the fault tier's other
    half (a study through Ray, its processes on the same 2 cores) made one plan of 18 s
    alone take 96 s of wall time in CI (2026-12-07)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "raystudy.cli", "plan", str(spec), "--gpus", "8"]
    command += ["--budget", "20"]
    started, spent_before = time.perf_counter(), _children_cpu_seconds()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    seconds = time.perf_counter() - started
    cpu_seconds = _children_cpu_seconds() - spent_before
    assert result.returncode == 0, result.stderr
    assert f"Study '{spec.stem}'" in result.stdout
    if "optuna" not in spec.read_text():
        assert "calibrating 1/" in result.stderr and "estimate:" in result.stdout
        assert (tmp_path / "raystudy" / "plan-calibration.json").exists()
        # Trials that ask for a GPU: where the time goes on the 8 GPUs, and what bounds it.
        asks_gpu = load_spec(spec).resources.gpu > 0
        assert ("bound by the" in result.stdout) == asks_gpu, result.stdout
    shown = f"{spec.name}: plan took {cpu_seconds:.0f} s of CPU ({seconds:.0f} s of wall time)"
    assert cpu_seconds < 80, shown


def _children_cpu_seconds() -> float:
    """User and system seconds of this process's finished children (`subprocess.run` waits for
    its child, so the difference around one call is that call's)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# The UI itself (loopback only, serving the study's store) is tested once, in
# tests/reliability/test_security.py.
