"""A study whose disk fills up mid-way: a real tmpfs of its own as the study folder, filled by
the test once the first trial has finished. The driver stops with an error that says the disk
is full, what was recorded stays, and after space is made `resume` finishes the study without
training the finished trial again. The helpers' own pieces run on real full devices too:
/dev/full for the driver's log, SQLite's page limit for the store's SQLITE_FULL."""

from __future__ import annotations

import errno
import os
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from faults import cli, start_driver, wait_for_a_finished_trial
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import TEMPORARILY_UNAVAILABLE
from tiny import LIGHT, SMOKE, tiny

from raystudy.disk_full import free_space, is_disk_full
from raystudy.study.folder import StudyInfo
from raystudy.tags import TRIAL_ID_TAG, TRIAL_RUNS
from raystudy.tracking.retry import is_busy
from raystudy.tune.state_backup import (
    BACKUP_DIR,
    back_up,
    reads_whole,
    restore_damaged,
    session_sets,
)


def _sqlite_full() -> sqlite3.OperationalError:
    """SQLite's own SQLITE_FULL: a database whose page limit is reached."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x BLOB)")
    db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0] + 1}")
    try:
        for _ in range(100):
            db.execute("INSERT INTO t VALUES (?)", (b"\0" * 65536,))
    except sqlite3.OperationalError as exc:
        return exc
    raise AssertionError("SQLite took 6 MB past its page limit")


def test_a_full_disk_is_told_apart_and_never_waited_out_as_busy() -> None:
    with pytest.raises(OSError) as caught, open("/dev/full", "w") as full:
        full.write("x")
        full.flush()
    assert caught.value.errno == errno.ENOSPC and is_disk_full(caught.value)
    sqlite_full = _sqlite_full()
    assert "database or disk is full" in str(sqlite_full) and is_disk_full(sqlite_full)
    # As MLflow's sqlite store passes it on: TEMPORARILY_UNAVAILABLE, the code of a busy store.
    wrapped = MlflowException(str(sqlite_full), error_code=TEMPORARILY_UNAVAILABLE)
    assert is_disk_full(wrapped) and not is_busy(wrapped)
    locked = MlflowException("database is locked", error_code=TEMPORARILY_UNAVAILABLE)
    assert is_busy(locked) and not is_disk_full(locked)
    try:
        try:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            raise RuntimeError("writing the checkpoint failed") from exc
    except RuntimeError as outer:
        assert is_disk_full(outer)
    assert not is_disk_full(FileNotFoundError(errno.ENOENT, "gone"))
    assert free_space(Path("/dev/full/not/there")).endswith(("bytes", "KiB", "MiB", "GiB"))


def test_the_drivers_log_on_a_full_disk_stops_and_the_driver_goes_on() -> None:
    program = (
        "from pathlib import Path\n"
        "from raystudy.terminal.capture import CapturedOutput\n"
        "captured = CapturedOutput(Path('/dev/full'))\n"
        "captured.start()\n"
        "for i in range(1000):\n"
        "    print('a line Tune prints', i)\n"
        "import os; os.write(1, b'written by C code')\n"
        "captured.stop()\n"
        "print('after:', captured.cut_short)\n"
    )
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "after: the disk holding /dev/full is full; the log stops there\n"


def test_a_run_whose_log_was_cut_short_says_so_when_it_ends() -> None:
    # A study's run as `raystudy run` watches it, its log moved onto a full disk.
    program = (
        "from pathlib import Path\n"
        "from raystudy.terminal import watched\n"
        "with watched('full', 1, command='run') as captured:\n"
        "    captured.move_to(Path('/dev/full'))\n"
        "    for i in range(1000):\n"
        "        print('a line Tune prints', i)\n"
        "print('the run went on')\n"
    )
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.endswith("the run went on\n")
    assert "Warning: the disk holding /dev/full is full; the log stops there" in ran.stderr


def test_a_copy_of_the_state_is_kept_only_while_whole_and_put_back(tmp_path: Path) -> None:
    tune_dir = tmp_path / "tune"
    tune_dir.mkdir()
    state = tune_dir / "experiment_state-2026-11-28_10-00-00.json"
    # Tune writes the basic variant generator's state as a pickle under a .json name.
    variants = tune_dir / "basic-variant-state-2026-11-28_10-00-00.json"
    state.write_text('{"trial_data": [["a", "b"]]}')
    variants.write_bytes(pickle.dumps({"generated": list(range(100))}))
    seen: dict = {}
    back_up(tune_dir, seen)
    kept = tune_dir / BACKUP_DIR
    assert not kept.exists(), "kept only once the files have stayed as they are"
    back_up(tune_dir, seen)
    assert sorted(p.name for p in kept.iterdir()) == sorted([state.name, variants.name])
    good_state, good_variants = state.read_bytes(), variants.read_bytes()
    # Cut short, as a full disk leaves them: never copied over the whole ones.
    state.write_text('{"trial_data": [["a", "b"], ["c"')
    variants.write_bytes(good_variants[: len(good_variants) // 2])
    assert not reads_whole(state) and not reads_whole(variants)
    back_up(tune_dir, seen)
    back_up(tune_dir, seen)
    assert (kept / state.name).read_bytes() == good_state
    assert (kept / variants.name).read_bytes() == good_variants
    # One damaged file puts back the whole set: the two must come from one save.
    variants.write_bytes(good_variants)
    assert sorted(restore_damaged(tune_dir)) == sorted([state.name, variants.name])
    assert state.read_bytes() == good_state and variants.read_bytes() == good_variants
    assert restore_damaged(tune_dir) == []  # whole now: nothing to put back
    state.write_text('{"trial_data": []}')  # a newer whole state is kept in its turn
    back_up(tune_dir, seen)
    back_up(tune_dir, seen)
    assert (kept / state.name).read_text() == '{"trial_data": []}'
    # A newer session cut short with nothing kept of it is moved aside: Tune reads the older.
    newer = tune_dir / "experiment_state-2026-11-28_11-00-00.json"
    newer.write_text('{"trial_da')
    assert restore_damaged(tune_dir) == [newer.name]
    assert not newer.exists() and newer.with_name(newer.name + ".damaged").exists()
    assert session_sets(tune_dir).keys() == {"2026-11-28_10-00-00"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 MiB tmpfs of the test's own (root can mount one; the fault tier runs as root)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"FULL-DISK TEST NOT RUN: cannot mount a tmpfs here ({mounted.stderr.strip()})")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as file:
        try:
            while True:
                file.write(b"\0" * (1 << 20))
                file.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def _trial_runs(study_dir: Path) -> list:
    info = StudyInfo.read(study_dir)
    return mlflow.MlflowClient(info.tracking_uri).search_runs([info.experiment_id], TRIAL_RUNS)


@pytest.mark.heavy  # a study through Tune on its own tmpfs: the fault tier
def test_a_disk_filled_mid_study_stops_it_saying_so_and_resume_finishes_it(
    small_disk: Path,
) -> None:
    overrides = tiny(
        "full",
        "train.steps=24",
        LIGHT,
        "grid={model: [{objective: beta_vae, beta: [1, 2, 4, 8]}]}",
        "execution.max_concurrent_trials=1",  # one at a time: the disk fills mid-study
    )
    sets = [a for o in overrides for a in ("--set", o)]
    study_dir = small_disk / "full"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"}
    driver = start_driver(cli("run", str(SMOKE), "--output", str(small_disk), *sets), **env)
    finished = wait_for_a_finished_trial(driver, study_dir)
    filler = _fill(small_disk)
    output, _ = driver.communicate(timeout=300)
    said = " ".join(output.split())
    assert driver.returncode == 2, output
    assert f"a disk the study writes to is full (its folder {study_dir} has" in said, output
    assert "`raystudy resume full` runs the rest" in said and "Traceback" not in said, output
    # What was recorded before the disk filled is all there.
    kept = {r.info.run_id: r for r in _trial_runs(study_dir) if r.info.status == "FINISHED"}
    assert {r.info.run_id for r in finished} <= set(kept)
    assert all("dis/mig" in r.data.metrics for r in kept.values())

    filler.unlink()
    resumed = subprocess.run(
        cli("resume", "full", "--output", str(small_disk)),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "4/4 trials done" in resumed.stdout
    runs = _trial_runs(study_dir)
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    assert len({r.data.tags[TRIAL_ID_TAG] for r in runs}) == 4
    for run in runs:
        assert "dis/mig" in run.data.metrics
        if run.info.run_id in kept:  # finished before the disk filled: not trained again
            assert run.info.end_time == kept[run.info.run_id].info.end_time
    info = StudyInfo.read(study_dir)
    assert mlflow.MlflowClient(info.tracking_uri).get_run(info.parent_run_id).info.status == (
        "FINISHED"
    )
