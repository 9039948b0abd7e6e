"""Faults inside trials, injected for real on a local Ray cluster: a trial's worker process
SIGKILLed mid-training (once with its newest checkpoint cut short), a grid cell whose training
diverges, and a study asking for more GPUs per trial than any node has."""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from conftest import fresh_ray
from faults import cli, descendants, trial_runs, tune_rows, wait_for
from pty_run import run_on_pty, screen_lines
from tiny import LIGHT, SMOKE, tiny
from typer.testing import CliRunner

from raystudy.analysis.core.columns import ERROR, RUN_NAME
from raystudy.analysis.core.tune_results import load_tune_results
from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.spec import StudySpec
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo
from raystudy.study.outcome import StudyOutcome
from raystudy.study.status import study_status
from raystudy.tags import CHECKPOINT_FALLBACK_TAG, DIVERGED_TAG, ERROR_TAG, TIMED_OUT_TAG
from raystudy.tune.cluster import start_local
from raystudy.tune.state import FINISHED, TUNE_DIR


@pytest.fixture(scope="module")
def cluster():
    """One local Ray for the module, with a logical GPU (what the over-ask is measured against)."""
    import ray

    fresh_ray()
    start_local(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


STEPS, REPORT, CHECKPOINT = 80, 4, 8


def _one_trial(spec_file: Path, name: str) -> StudySpec:
    """A one-trial study long enough to be hit mid-training, checkpointing every 8 steps."""
    return load_spec(
        spec_file,
        tiny(
            name,
            LIGHT,
            f"train.steps={STEPS}",
            f"train.report_every={REPORT}",
            f"train.checkpoint_every={CHECKPOINT}",
            "grid={seed: [0]}",
            "resources={cpu: 1, gpu: 0}",
        ),
    )


def _run_with_fault(
    spec: StudySpec, output: Path, fault: Callable[[], None], errors: list[BaseException]
) -> StudyOutcome:
    """Run the study while `fault` (which appends what it raises to `errors`) runs beside it
    in a thread; re-raise the fault's own failure."""
    injector = threading.Thread(target=fault, daemon=True)
    injector.start()
    outcome = run_study(spec, output=output, verbose=0)
    injector.join(timeout=5)
    if errors:
        raise errors[0]
    return outcome


# heavy: the suite's 10-minute budget (docs/performance/test-suite.md).
@pytest.mark.heavy
def test_killed_worker_resumes_from_its_checkpoint_into_the_same_run(
    cluster, tmp_path: Path
) -> None:
    spec = _one_trial(SMOKE, "workerkill")
    trial_dir = tmp_path / "workerkill" / TUNE_DIR / "000"  # one point: nothing to name it by
    killed: dict[str, float] = {}
    errors: list[BaseException] = []

    def kill_mid_training() -> None:
        def worker_at_step_20() -> dict | None:
            # Well before the end: a kill during evaluation would resume at the last step.
            rows = tune_rows(trial_dir)
            return rows[-1] if rows and 20 <= rows[-1].get("step", 0) <= STEPS // 2 else None

        try:
            row = wait_for(worker_at_step_20, 180, "the trial to reach step 20", every_s=0.05)
            pid = int(row["pid"])
            # Tune's row names the worker; it must be one of ours (the machine is shared).
            assert pid in descendants(os.getpid()), pid
            os.kill(pid, signal.SIGKILL)
            killed.update(pid=pid, at=time.time())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    outcome = _run_with_fault(spec, tmp_path, kill_mid_training, errors)
    assert killed, "the worker was never killed"
    assert outcome.ok, outcome.states

    runs = trial_runs(outcome.info.tracking_uri, outcome.info.experiment_id)
    assert len(runs) == 1, "the restarted trial kept its MLflow run"
    run = runs[0]
    assert run.info.status == "FINISHED"
    client = mlflow.MlflowClient(outcome.info.tracking_uri)
    history = client.get_metric_history(run.info.run_id, "train/loss")
    # Every report exactly once: none lost with the worker, none logged again after it.
    assert sorted(m.step for m in history) == list(range(REPORT, STEPS + 1, REPORT))
    before_kill = [m.step for m in history if m.timestamp / 1000 < killed["at"]]
    assert before_kill and max(before_kill) < STEPS, "the kill landed mid-training"
    for key in ("dis/mig", "eval/elbo", "transfer/ood2_a/gbt/mae"):
        assert math.isfinite(run.data.metrics[key]), key

    rows = tune_rows(trial_dir)
    first = [r for r in rows if r["pid"] == killed["pid"]]
    second = [r for r in rows if r["pid"] != killed["pid"]]
    assert first and second, "the trial ran in a second worker after the kill"
    resumed_from = int(second[0]["step"]) - REPORT
    # From a checkpoint, not from scratch, and at most one checkpoint interval back.
    assert resumed_from > 0 and resumed_from % CHECKPOINT == 0, resumed_from
    assert 0 <= max(before_kill) - resumed_from <= CHECKPOINT, (max(before_kill), resumed_from)
    assert int(second[-1]["step"]) == STEPS and second[-1]["evaluated"] == 1.0


# heavy: a second Tune restart of a killed worker, as above.
@pytest.mark.heavy
def test_a_corrupt_newest_checkpoint_resumes_from_the_older_one_and_says_so(
    cluster, tmp_path: Path
) -> None:
    spec = _one_trial(SMOKE, "corruptckpt")
    trial_dir = tmp_path / "corruptckpt" / TUNE_DIR / "000"
    corrupted: dict[str, object] = {}
    errors: list[BaseException] = []

    def corrupt_then_kill() -> None:
        def two_checkpoints_kept() -> dict | None:
            rows = tune_rows(trial_dir)
            kept = sorted(trial_dir.glob("checkpoint_0*"))
            ok = rows and 2 * CHECKPOINT + REPORT <= rows[-1].get("step", 0) <= STEPS // 2
            return rows[-1] if ok and len(kept) == 2 else None

        try:
            row = wait_for(two_checkpoints_kept, 180, "two kept checkpoints", every_s=0.05)
            pid = int(row["pid"])
            assert pid in descendants(os.getpid()), pid
            os.kill(pid, signal.SIGSTOP)  # frozen: it writes no newer checkpoint meanwhile
            time.sleep(1.0)  # the driver takes in what the worker sent before it froze
            newest = sorted(trial_dir.glob("checkpoint_0*"))[-1]
            state = newest / "state.pt"
            state.write_bytes(state.read_bytes()[:1000])  # a write cut short
            corrupted.update(path=str(state))
            os.kill(pid, signal.SIGKILL)
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    outcome = _run_with_fault(spec, tmp_path, corrupt_then_kill, errors)
    assert corrupted, "no checkpoint was corrupted"
    assert outcome.ok, outcome.states
    [run] = trial_runs(outcome.info.tracking_uri, outcome.info.experiment_id)
    assert run.info.status == "FINISHED" and ERROR_TAG not in run.data.tags
    note = run.data.tags[CHECKPOINT_FALLBACK_TAG]
    assert str(corrupted["path"]) in note and "resumed from the older" in note, note
    client = mlflow.MlflowClient(outcome.info.tracking_uri)
    history = client.get_metric_history(run.info.run_id, "train/loss")
    # one checkpoint further back, yet every report is in the run exactly once
    assert sorted(m.step for m in history) == list(range(REPORT, STEPS + 1, REPORT))
    assert math.isfinite(run.data.metrics["dis/mig"])


# heavy: a study whose trial runs until its time limit.
@pytest.mark.heavy
def test_a_trial_past_its_time_limit_fails_with_a_tag_and_the_study_completes(
    cluster, tmp_path: Path
) -> None:
    limit = 20
    overrides = tiny(
        "hung",
        LIGHT,
        "grid={seed: [0], train: {steps: [8, 10000000]}}",  # the second never ends in time
        f"execution.trial_time_limit_s={limit}",
        "execution.max_failures=0",
        "resources={cpu: 1, gpu: 0}",
    )
    spec = load_spec(SMOKE, [o for o in overrides if not o.startswith("train.steps=")])
    started = time.monotonic()
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert time.monotonic() - started < 10 * limit
    assert outcome.states == {FINISHED: 1, "ERROR": 1}, outcome.states
    runs = trial_runs(outcome.info.tracking_uri, outcome.info.experiment_id)
    by_steps = {r.data.params["train.steps"]: r for r in runs}
    assert by_steps["8"].info.status == "FINISHED"
    hung = by_steps["10000000"]
    assert hung.info.status == "FAILED" and hung.data.tags[TIMED_OUT_TAG] == str(limit)
    assert hung.data.tags[ERROR_TAG].startswith("TrialTimedOut: the trial ran past")


# heavy for CI's time (55 s, the suite reached 614 s on 2026-11-27): the divergence and its
# step are caught in test_train.py and test_stacked.py; a failed trial beside finished ones
# in test_analysis_study.py.
@pytest.mark.heavy
def test_a_diverging_cell_fails_with_its_step_and_the_rest_of_the_study_completes(
    tmp_path: Path,
) -> None:
    """Run through the CLI on a real pseudo-terminal, as a user would: the failure is said at
    once, above one progress bar, and Ray's and Tune's own output goes to the study's log."""
    overrides = tiny(
        "diverging",
        LIGHT,
        "train.steps=16",
        "resources={cpu: 1, gpu: 0}",
        "execution.max_failures=0",  # a retry would only diverge again, at the same step
        # three sane cells and one with a learning rate no model survives
        "grid={train: [{lr: 0.0005, kl_warmup_steps: [0, 1, 2]}, {lr: 1.0e+6}]}",
    )
    sets = [a for o in overrides for a in ("--set", o)]
    code, raw = run_on_pty(cli("run", str(SMOKE), "--output", str(tmp_path), *sets), timeout=300)
    lines = screen_lines(raw)
    assert code == 1, raw[-3000:]  # a trial failed: the study did not finish
    study_dir = tmp_path / "diverging"
    info = StudyInfo.read(study_dir)
    assert study_status(study_dir) == {FINISHED: 3, "ERROR": 1}

    # What the terminal shows: the study, the bar, the failure with its error and its log,
    # the summary; none of Tune's status tables or Ray's messages.
    failed = [i for i, line in enumerate(lines) if line.startswith("Trial 003_lr=")]
    assert len(failed) == 1, lines
    assert "failed: " in lines[failed[0]]
    assert "TrainingDiverged: training diverged at step" in lines[failed[0]]
    error_file = lines[failed[0] + 1].removeprefix("  full error: ")
    assert Path(error_file).is_file() and "TrainingDiverged" in Path(error_file).read_text()
    assert lines[-1].startswith("trials") or "3 finished, 1 failed." in raw
    assert len(lines) <= 12, lines
    assert not any("Trial status" in line or "ray.init" in line for line in lines), lines
    (log,) = (study_dir / "logs").glob("run-*.log")
    assert f"Log (Ray, Tune, trial output): {log}" in lines
    assert "Trial status" in log.read_text()  # Tune's table, kept for who wants it

    runs = {r.info.run_name: r for r in trial_runs(info.tracking_uri, info.experiment_id)}
    assert len(runs) == 4, "one run per cell"
    bad = runs.pop("003_lr=1000000.0")
    assert bad.info.status == "FAILED"
    step = int(bad.data.tags[DIVERGED_TAG])
    assert 0 < step < 16, "stopped early, at the first report with a non-finite loss"
    assert bad.data.tags[ERROR_TAG] == (
        f"TrainingDiverged: training diverged at step {step}: loss is nan"
    )
    assert "dis/mig" not in bad.data.metrics, "a diverged model is not evaluated"
    assert {r.info.status for r in runs.values()} == {"FINISHED"}

    result = CliRunner().invoke(
        app,
        [
            "analyze",
            "diverging",
            "--output",
            str(tmp_path),
            "--bootstrap",
            "20",
            "--min-trials",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Runs: 3 finished, 1 failed" in result.output
    assert "not analysed: 003_lr=1000000.0 (failed: TrainingDiverged: training diverged" in (
        result.output
    )
    correlations = pd.read_csv(study_dir / "analysis" / "correlations.csv")
    assert set(correlations["n"].dropna()) == {3}, "the failed trial is left out"

    # Tune's storage tells the same story, for when MLflow is gone.
    tune = load_tune_results(study_dir).set_index(RUN_NAME)
    assert tune.loc["003_lr=1000000.0", "status"] == "FAILED"
    assert "diverged at step" in tune.loc["003_lr=1000000.0", ERROR]
    for name, run in runs.items():
        assert tune.loc[name, "status"] == "FINISHED"
        assert tune.loc[name, "metrics.dis/mig"] == pytest.approx(run.data.metrics["dis/mig"])


def test_more_gpus_per_trial_than_any_node_has_fails_at_once(cluster, tmp_path: Path) -> None:
    overrides = tiny("greedy", "resources={cpu: 1, gpu: 2}")
    sets = [a for o in overrides for a in ("--set", o)]
    started = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--output", str(tmp_path), *sets])
    elapsed = time.monotonic() - started
    assert result.exit_code == 5, result.output  # no node can hold it
    message = " ".join(result.output.split())
    assert "resources.gpu=2" in message, "what was asked"
    assert "nodes: 2 CPU/1 GPU" in message, "what exists"
    assert "pending forever" in message
    assert elapsed < 30, f"failed after {elapsed:.0f} s, not at once"
    assert not (tmp_path / "greedy" / TUNE_DIR).exists(), "no trial was started"

    # Above one GPU only whole GPUs exist for Ray; 1.5 would fail deep inside Tune.
    sets = ["--set", "name=sesqui", "--set", "resources={cpu: 1, gpu: 1.5}"]
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--output", str(tmp_path), *sets])
    assert result.exit_code == 2, result.output
    assert "resources.gpu: 1.5 GPUs per trial" in " ".join(result.output.split())
    assert not (tmp_path / "sesqui").exists(), "rejected before anything was written"
