"""The driver of a study SIGKILLed mid-study (no Ctrl-C, no cleanup: a lost head node or an
OOM kill), its folder moved and `raystudy relocate`d, then `raystudy resume` there: every grid
point ends with exactly one finished run, and what had finished is not trained again. While it
runs, a second driver is refused."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import mlflow
import pytest
from faults import cli, finished_runs, kill_session, session, trial_runs, wait_for
from tiny import LIGHT, SMOKE, tiny

from raystudy.study.folder import StudyInfo
from raystudy.study.lock import holder
from raystudy.study.status import study_status
from raystudy.tags import ROLE_TAG, STUDY_ROLE, equals
from raystudy.tune.state import FINISHED

STEPS = 16
SEEDS = [0, 1, 2]


# heavy: the suite's budget (docs/performance/test-suite.md); Ctrl-C and resume run in CI.
@pytest.mark.heavy
def test_killed_driver_resumes_to_one_finished_run_per_grid_point(tmp_path: Path) -> None:
    overrides = tiny(
        "driverkill",
        LIGHT,
        f"train.steps={STEPS}",
        "evaluation.probes=[]",  # finished is what counts here, not what is scored
        f"grid={{seed: {SEEDS}}}",
        "resources={cpu: 1, gpu: 0}",
        "execution.max_concurrent_trials=2",
    )
    sets = [a for o in overrides for a in ("--set", o)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(
        cli("run", str(SMOKE), "--output", str(tmp_path), *sets),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own session: Ray's processes are found and killed by it
    )
    study_dir = tmp_path / "driverkill"
    try:
        wait_for(lambda: holder(study_dir) is not None, 120, "the driver to take its lock")
        # A second driver on the live study is refused, naming the first, and changes nothing.
        second = subprocess.run(
            cli("resume", "driverkill", "--output", str(tmp_path)),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        said = " ".join((second.stdout + second.stderr).split())
        assert second.returncode != 0 and f"pid {driver.pid} on host" in said, said
        assert driver.poll() is None
        wait_for(lambda: finished_runs(study_dir), 240, "a first trial to finish", every_s=0.5)
        os.killpg(driver.pid, signal.SIGKILL)  # the driver, its GCS and raylet at once
        driver.wait(timeout=30)
        # Ray's workers live in process groups of their own: they notice and exit.
        wait_for(lambda: not session(driver.pid), 30, "the orphaned Ray workers to exit")
    finally:
        kill_session(driver.pid)
        log.close()
    assert driver.returncode == -signal.SIGKILL

    before = {r.info.run_name: r for r in finished_runs(study_dir)}
    assert 1 <= len(before) < len(SEEDS), "killed mid-study"
    assert sum(study_status(study_dir).values()) == len(SEEDS)

    # The interrupted study's folder moved elsewhere (a new disk, another user's home), its
    # killed driver's lock still in it: relocated, then resumed there.
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    study_dir = Path(shutil.move(study_dir, moved / "driverkill"))
    relocated = subprocess.run(
        cli("relocate", "driverkill", "--output", str(moved)),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert relocated.returncode == 0, relocated.stdout + relocated.stderr
    assert "Tune's saved state pointed at the new folder" in relocated.stdout
    info = StudyInfo.read(study_dir)
    assert info.study_dir == study_dir.resolve()
    assert sum(study_status(study_dir).values()) == len(SEEDS)

    resumed = subprocess.Popen(
        cli("resume", "driverkill", "--output", str(moved)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = resumed.communicate(timeout=300)
    finally:
        kill_session(resumed.pid)
    assert resumed.returncode == 0, output
    assert f"{len(SEEDS)} finished" in output

    client = mlflow.MlflowClient(info.tracking_uri)
    runs = trial_runs(info.tracking_uri, info.experiment_id)
    assert sorted(r.data.params["seed"] for r in runs) == [str(s) for s in SEEDS], (
        "exactly one run per grid point"
    )
    assert {r.info.status for r in runs} == {"FINISHED"}
    for run in runs:
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(steps) == list(range(4, STEPS + 1, 4)), (run.info.run_name, steps)
        assert "dis/mig" in run.data.metrics
        if run.info.run_name in before:  # finished before the kill: not trained again
            assert run.info.end_time == before[run.info.run_name].info.end_time
            assert len(client.get_metric_history(run.info.run_id, "dis/mig")) == 1
    assert study_status(study_dir) == {FINISHED: len(SEEDS)}
    # Trials Tune created after the move are named from the moved folder's labels too (a
    # namer still reading the old folder's file falls back to the bare number).
    folders = [p.name for p in (study_dir / "tune").iterdir() if p.is_dir()]
    assert not [f for f in folders if f.isdigit()], folders
    parents = client.search_runs([info.experiment_id], equals(ROLE_TAG, STUDY_ROLE))
    assert [p.info.status for p in parents] == ["FINISHED"]


# heavy (the fault tier): a study interrupted twice, then resumed.
@pytest.mark.heavy
def test_a_second_ctrl_c_stops_at_once_and_the_study_still_resumes(tmp_path: Path) -> None:
    overrides = tiny(
        "twice",
        LIGHT,
        f"train.steps={STEPS}",
        "evaluation.probes=[]",
        f"grid={{seed: {SEEDS}}}",
        "resources={cpu: 1, gpu: 0}",
        "execution.max_concurrent_trials=1",
    )
    sets = [a for o in overrides for a in ("--set", o)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    driver = subprocess.Popen(
        cli("run", str(SMOKE), "--output", str(tmp_path), *sets),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    study_dir = tmp_path / "twice"
    try:
        wait_for(lambda: finished_runs(study_dir), 240, "a first trial to finish", every_s=0.5)
        driver.send_signal(signal.SIGINT)  # Tune starts its orderly stop...
        time.sleep(0.3)
        driver.send_signal(signal.SIGINT)  # ...and the user does not wait for it
        time.sleep(1.0)
        with contextlib.suppress(ProcessLookupError):
            driver.send_signal(signal.SIGINT)  # nor for Ray's shutdown at exit
        output, _ = driver.communicate(timeout=120)
    finally:
        kill_session(driver.pid)
    said = " ".join(output.split())
    # Stopped at once while Tune was stopping (130, said so), or, when Tune had stopped
    # already, ended as one Ctrl-C ends a study (1); never a traceback or a crash.
    assert driver.returncode in (1, 130), (driver.returncode, output[-3000:])
    if driver.returncode == 130:
        assert "Interrupted: stopped at once" in said
    assert "raystudy resume twice" in said
    assert "Traceback" not in output and "Exception ignored" not in output, output[-3000:]

    resumed = subprocess.run(
        cli("resume", "twice", "--output", str(tmp_path)),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    info = StudyInfo.read(study_dir)
    runs = trial_runs(info.tracking_uri, info.experiment_id)
    assert sorted(r.data.params["seed"] for r in runs) == [str(s) for s in SEEDS]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert study_status(study_dir) == {FINISHED: len(SEEDS)}
