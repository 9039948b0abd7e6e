"""Two drivers on one study: the second is refused, naming the first's pid and host, before it
starts Ray or touches the study; a driver that dies (SIGKILL) leaves no lock behind.

The first driver here is a real process holding the study's lock as `raystudy run` does
(`raystudy.study.lock.driver_lock`); the second is the real command line. A whole `raystudy run`
as the first driver is in tests/reliability/test_faults_driver.py (it needs Ray).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tiny import SMOKE
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.study.folder import STUDY_FILE, StudyError, StudyInfo
from raystudy.study.lock import LOCK_FILE, driver_lock, holder

HOLD = """
import sys, time
from pathlib import Path
from raystudy.study.lock import driver_lock
with driver_lock(Path(sys.argv[1]), "run"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    folder = tmp_path / "locked"
    folder.mkdir()
    StudyInfo(folder.name, folder, "sqlite:///nowhere.db", "1", "run", 1, 1).write()
    (folder / "spec.yaml").write_text(SMOKE.read_text())
    return folder


@pytest.fixture
def first_driver(study: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(study)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, " ".join(result.output.split())


def test_a_second_driver_is_refused_naming_the_first(
    study: Path, first_driver: subprocess.Popen[str]
) -> None:
    record = holder(study)
    assert record is not None and record["pid"] == first_driver.pid
    assert record["host"] == socket.gethostname()
    pid, host = str(first_driver.pid), socket.gethostname()
    with pytest.raises(StudyError, match=f"pid {pid} on host {host}"), driver_lock(study, "run"):
        pytest.fail("a second driver took the lock")
    before = sorted(p.name for p in study.iterdir())
    started = time.monotonic()
    code, out = invoke("resume", study.name, "--output", str(study.parent))
    assert code == 6 and f"pid {pid} on host {host}" in out and "resume" in out, out
    code, out = invoke(
        "run", str(SMOKE), "--set", f"name={study.name}", "--output", str(study.parent),
        "--overwrite",
    )  # fmt: skip
    assert code == 6 and f"pid {pid} on host {host}" in out and "overwrite" in out, out
    # refused before Ray or anything else (the test process may hold another test's Ray, so
    # it is told by the time): quick, and the study folder is as it was
    assert time.monotonic() - started < 30
    assert sorted(p.name for p in study.iterdir()) == before
    assert (study / STUDY_FILE).is_file()
    assert first_driver.poll() is None  # the first driver was not disturbed
    code, out = invoke("status", study.name, "--output", str(study.parent))
    assert f"being driven by pid {pid} on host {host}" in out, out


def test_a_killed_driver_leaves_no_lock(study: Path, first_driver: subprocess.Popen[str]) -> None:
    assert holder(study) is not None
    os.kill(first_driver.pid, signal.SIGKILL)
    first_driver.wait()
    # its record is still in the file, but nobody holds the lock: the study is free
    assert str(first_driver.pid) in (study / LOCK_FILE).read_text()
    assert holder(study) is None
    with driver_lock(study, "resume"):
        record = holder(study)
        # the record now names this process (a second open file of it conflicts with its lock)
        assert str(os.getpid()) in (study / LOCK_FILE).read_text()
        assert record is None or record["pid"] == os.getpid()
    assert holder(study) is None


def test_a_lock_recorded_by_another_host_refuses_and_says_which_file_to_delete(
    study: Path,
) -> None:
    (study / LOCK_FILE).write_text('{"pid": 4242, "host": "head-node-7", "doing": "run"}')
    with pytest.raises(StudyError) as refused, driver_lock(study, "resume"):
        pytest.fail("took a lock another host records")
    message = str(refused.value)
    assert "pid 4242 on host head-node-7" in message and str(study / LOCK_FILE) in message


@contextlib.contextmanager
def starting_study(tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """A folder whose lock a live process holds, as `raystudy run` does before it has written
    study.json (it takes the lock, then starts its MLflow store, seconds); its (folder, pid,
    host). The process is gone once the block ends."""
    folder = tmp_path / "starting"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield folder, str(proc.pid), socket.gethostname()
    finally:
        proc.kill()
        proc.wait()


def test_a_study_whose_run_has_not_yet_written_study_json_is_busy_not_missing(
    tmp_path: Path,
) -> None:
    # A second driver in that window is told who drives the study.
    with starting_study(tmp_path) as (folder, pid, host):
        assert not (folder / STUDY_FILE).exists()
        for command in ("resume", "rescore"):
            extra = ["--metrics", "mig"] if command == "rescore" else []
            code, out = invoke(command, folder.name, "--output", str(tmp_path), *extra)
            assert code == 6 and f"pid {pid} on host {host}" in out and command in out, out
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]
    # once the half-made study's driver is gone, it is what it is: not a study
    code, out = invoke("resume", folder.name, "--output", str(tmp_path))
    assert code == 3 and "not a raystudy study" in out, out


def test_status_of_a_study_being_started_names_its_driver(tmp_path: Path) -> None:
    # In that window `status` says the study is being started and by whom (exit 0), not that
    # the folder is no study.
    with starting_study(tmp_path) as (folder, pid, host):
        code, out = invoke("status", folder.name, "--output", str(tmp_path))
        assert code == 0, out
        assert f"being started by pid {pid} on host {host} (run)" in out, out
        assert "not a raystudy study" not in out
        code, out = invoke("status", folder.name, "--output", str(tmp_path), "--json")
        data = json.loads(out)
        assert code == 0 and data["starting"] is True, out
        assert str(data["driver"]["pid"]) == pid and data["driver"]["host"] == host
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]
    code, out = invoke("status", folder.name, "--output", str(tmp_path))
    assert code == 3 and "not a raystudy study" in out, out
