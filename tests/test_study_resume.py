"""Interrupt a real study (Ctrl-C to the driver process) and finish it with `raystudy resume`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from reliability.faults import start_driver, wait_for_a_finished_trial
from tiny import LIGHT, SMOKE, tiny

from raystudy.study.folder import StudyInfo
from raystudy.study.status import study_status
from raystudy.tags import TRIAL_RUNS
from raystudy.tune.state import FINISHED


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "raystudy.cli", *args]


def trial_runs(info: StudyInfo) -> list:
    client = mlflow.MlflowClient(info.tracking_uri)
    return client.search_runs([info.experiment_id], TRIAL_RUNS)


def interrupt_once_a_trial_finishes(command: list[str], study_dir: Path) -> str:
    """Run the `raystudy` driver `command`, Ctrl-C it once MLflow holds a finished trial of
    `study_dir`; check that it stops as interrupted and return what it printed."""
    driver = start_driver(command)
    wait_for_a_finished_trial(driver, study_dir)
    driver.send_signal(signal.SIGINT)  # what Ctrl-C does
    output, _ = driver.communicate(timeout=120)
    assert driver.returncode == 1, output
    assert f"raystudy resume {study_dir.name}" in output
    return output


def assert_plain_output(printed: str, study_dir: Path, command: str) -> None:
    lines = printed.splitlines()
    assert "\x1b[" not in printed, "no terminal codes down a pipe"
    progress = [line for line in lines if " trials done | " in line]
    assert progress and progress[0].startswith(("0/4 trials done", "1/4 trials done"))
    assert not any("Trial status" in line or "Trial name" in line for line in lines), printed
    (log,) = (study_dir / "logs").glob(f"{command}-*.log")
    assert f"Log (Ray, Tune, trial output): {log}" in lines
    assert len(lines) <= 12, printed


@pytest.mark.heavy  # a study interrupted and resumed through Tune: the fault tier
def test_interrupted_study_resumes_without_retraining_or_duplicates(tmp_path: Path) -> None:
    overrides = tiny(
        "resumable",
        "train.steps=24",
        LIGHT,
        "grid={model: [{objective: beta_vae, beta: [1, 2, 4, 8]}]}",
        "execution.max_concurrent_trials=1",  # one at a time: the interrupt lands mid-study
    )
    sets = [a for o in overrides for a in ("--set", o)]
    study_dir = tmp_path / "resumable"
    printed = interrupt_once_a_trial_finishes(
        cli("run", str(SMOKE), "--output", str(tmp_path), *sets), study_dir
    )
    # Not a terminal: plain progress lines, the summary, and Ray's and Tune's output in a log.
    assert_plain_output(printed, study_dir, "run")

    info = StudyInfo.read(study_dir)
    before = {r.info.run_id: r for r in trial_runs(info) if r.info.status == "FINISHED"}
    assert 1 <= len(before) < 4
    counts = study_status(study_dir)
    # A trial can be cut off after closing its MLflow run but before Tune got its result:
    # Tune then still counts it as running, and resume must not run it again.
    assert counts.get(FINISHED, 0) <= len(before) <= counts.get(FINISHED, 0) + 1
    assert sum(counts.values()) == 4

    resumed = subprocess.run(
        cli("resume", "resumable", "--output", str(tmp_path)),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_plain_output(resumed.stdout + resumed.stderr, study_dir, "resume")
    assert "4/4 trials done" in resumed.stdout
    runs = trial_runs(info)
    assert len(runs) == 4, "one MLflow run per trial, across the interruption"
    assert {r.info.status for r in runs} == {"FINISHED"}
    client = mlflow.MlflowClient(info.tracking_uri)
    for run in runs:
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(steps) == list(range(4, 25, 4)), (run.info.run_name, steps)
        assert "dis/mig" in run.data.metrics
        if run.info.run_id in before:  # finished before the interrupt: not trained again
            assert run.info.end_time == before[run.info.run_id].info.end_time
    assert study_status(study_dir) == {FINISHED: 4}
    parent = client.get_run(info.parent_run_id)
    assert parent.info.status == "FINISHED"
