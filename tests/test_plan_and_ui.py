"""`raystudy plan` (trial count, placement, calibrated cost) and `raystudy ui` (a real server)."""

from __future__ import annotations

from tiny import SMOKE, tiny
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.plan import format_plan, make_plan


def test_plan_places_trials_and_calibrates_each_kind() -> None:
    spec = load_spec(SMOKE, tiny("plan", "evaluation.metrics=[mig]"))
    plan = make_plan(spec, cluster_cpus=8, cluster_gpus=1, calibration_steps=2)
    assert plan.num_trials == 8
    assert plan.trials_per_gpu == 4  # gpu 0.25
    assert plan.concurrent == 4  # the one GPU bounds it, not the 8 CPUs
    assert set(plan.kinds.values()) == {4} and len(plan.kinds) == 2  # beta_vae and ada_gvae
    assert {c.kind for c in plan.calibrations} == set(plan.kinds)
    assert all(c.seconds_per_step > 0 and c.eval_seconds > 0 for c in plan.calibrations)
    expected = sum(plan.trial_seconds[k] * n for k, n in plan.kinds.items()) / 3600
    assert plan.total_trial_hours == expected and plan.wall_hours == expected / 4
    text = format_plan(plan, "plan")
    assert "8 trials" in text and "4 trials at once" in text and "4 trials share a GPU" in text

    cpu_only = make_plan(spec, cluster_cpus=3, cluster_gpus=0, calibration_steps=None)
    assert cpu_only.concurrent == 3 and cpu_only.gpu == 0 and not cpu_only.calibrations


def test_plan_command_without_calibration() -> None:
    result = CliRunner().invoke(
        app, ["plan", str(SMOKE), "--no-calibrate", "--cpus", "16", "--gpus", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "8 trials" in result.output and "8 trials at once" in result.output


# The UI itself (loopback only, serving the study's store) is tested once, in
# tests/reliability/test_security.py.
