"""Helpers of the fault tests: real processes found, killed and waited for, Tune's and
MLflow's records read back, and a trial's logging replayed in a process of its own.

Processes are found through /proc (Linux), and only among the descendants of this test
process or inside a session this test started: the machine is shared, and a fault test must
never touch another user's Ray workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow

from raystudy.tags import TRIAL_RUNS


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "raystudy.cli", *args]


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat fields after the command name (state, ppid, ...), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields follow the last ')'.
    return stat.rsplit(")", 1)[1].split()


def _ppid(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    children: dict[int, list[int]] = {}
    for p in _pids():
        parent = _ppid(p)
        if parent is not None:
            children.setdefault(parent, []).append(p)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def session(sid: int) -> set[int]:
    """Every live process of the session `sid` (a `start_new_session=True` child's pid):
    Ray's workers leave the driver's process group but stay in its session. Zombies are
    dead already (their parent has yet to reap them) and are left out."""
    members = set()
    for p in _pids():
        try:
            if os.getsid(p) == sid and (_stat(p) or ["Z"])[0] != "Z":
                members.add(p)
        except OSError:
            continue
    return members


def kill_session(sid: int, timeout_s: float = 30.0) -> None:
    """SIGKILL every process of a session this test started and wait until none is left."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = session(sid)
        if not alive:
            return
        for p in alive:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                continue
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of session {sid} survived SIGKILL: {alive}")
        time.sleep(0.2)


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.3):
    """Poll `condition` until it returns something truthy (returned) or fail naming `what`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def tune_rows(trial_dir: Path) -> list[dict[str, Any]]:
    """The reports Tune recorded for one trial (its result.json), complete lines only."""
    path = trial_dir / "result.json"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the line being written
    return rows


def trial_runs(uri: str, experiment_id: str) -> list:
    client = mlflow.MlflowClient(uri)
    return client.search_runs([experiment_id], TRIAL_RUNS)


def start_driver(command: list[str], **env: str) -> subprocess.Popen[str]:
    """A `raystudy` driver process, unbuffered, its stdout and stderr together in one pipe."""
    return subprocess.Popen(
        command,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_a_finished_trial(
    driver: subprocess.Popen[str], study_dir: Path, timeout_s: float = 240
) -> list:
    """The study's finished trial runs, once MLflow holds one while `driver` runs. A driver
    that ends first, or no trial finished within `timeout_s`, fails the test with the end
    of the driver's output (the driver killed first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.5)
        finished = finished_runs(study_dir)
        if finished:
            return finished
    ended = driver.poll() is not None
    driver.kill()
    output = driver.communicate()[0] if driver.stdout is not None else ""
    why = "the driver ended first" if ended else f"none in {timeout_s:.0f} s"
    raise AssertionError(f"no trial of {study_dir.name} finished ({why}):\n{output[-3000:]}")


def finished_runs(study_dir: Path) -> list:
    """The study's trial runs that MLflow has as FINISHED (none before the study exists)."""
    from raystudy.study.folder import StudyInfo

    if not (study_dir / "study.json").is_file():
        return []
    info = StudyInfo.read(study_dir)
    runs = trial_runs(info.tracking_uri, info.experiment_id)
    return [r for r in runs if r.info.status == "FINISHED"]


TRAIN_KEYS = ("train/loss", "train/recon", "train/kl")


def writer(
    uri: str, experiment_id: str, index: int, steps: int, barrier: Any, env: dict[str, str]
) -> None:
    """One trial's logging as `run_trial` does it (open by trial id, a row per step), in a
    process of its own; the value of step s is s * 10 + index, so a lost, repeated or
    misfiled point shows. Kept here: a forked process has this module, not Ray, imported."""
    from raystudy.tracking.trial_run import TrialRun

    os.environ.update(env)  # MLflow reads its settings when it is called
    run = TrialRun.open(uri, experiment_id, f"t{index}", f"writer{index}", {"i": index}, {})
    barrier.wait(timeout=120)  # all write at the same moment
    for step in range(1, steps + 1):
        run.log_metrics({k: float(step * 10 + index) for k in TRAIN_KEYS}, step)
    run.finish("FINISHED")
    if run.offline is not None:
        raise SystemExit(run.offline)
