"""One driver per study: a lock file in the study folder, held while `run` or `resume` drives it.

Two drivers on one study would each start the study's trials, write the same MLflow runs and
overwrite each other's Tune state. The driver holds an exclusive `flock` on `driver.lock` for as
long as it runs; the kernel releases it when the process ends, however it ends (a SIGKILLed
driver leaves no stale lock to clean up). The file records the holder's pid, host and start, so
that a second driver, refused, can say who holds the study.

`flock` locks are per host on network file systems that do not forward them; the file's host
field then still tells a second driver on another host that the study is driven elsewhere, but
cannot tell whether that driver is alive: the message says which file to delete if it is not.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from raystudy.study.folder import StudyBusy, StudyError

LOCK_FILE = "driver.lock"


def holder(study_dir: Path) -> dict[str, object] | None:
    """Who drives the study now: the lock file's record while its lock is held, else None.

    A record left by a driver that ended (its flock gone) is not a holder; a record naming
    another host is one, since its flock cannot be seen from here."""
    path = study_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StudyError(f"{path}: cannot read the study's driver lock ({exc.strerror})") from None
    try:
        record = _record(fd)
        try:
            # A shared lock is refused only while a driver holds the exclusive one.
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return record or {"pid": "?", "host": "?"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        if record and record.get("host") != socket.gethostname():
            return record
        return None
    finally:
        os.close(fd)


def refuse_if_driven(study_dir: Path, doing: str) -> None:
    """StudyBusy naming the live driver's pid and host when the study has one."""
    record = holder(study_dir)
    if record is not None:
        raise StudyBusy(_refusal(study_dir, record, doing))


@contextlib.contextmanager
def driver_lock(study_dir: Path, doing: str) -> Iterator[None]:
    """Hold the study's lock while the body runs; StudyBusy naming the holder when another
    driver has it. The lock file stays (with no lock on it) when the body ends."""
    path = study_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyBusy(_refusal(study_dir, _record(fd) or {}, doing)) from None
        record = _record(fd)
        if record and record.get("host") != socket.gethostname():
            raise StudyBusy(_refusal(study_dir, record, doing))
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "doing": doing,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        try:
            yield
        finally:
            # Ended here: the record no longer names a driver on another host's behalf.
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


def _record(fd: int) -> dict[str, object] | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def driver_words(record: dict[str, object]) -> str:
    """A lock record said: "pid 1234 on host head-0 (run) since <start>"."""
    since = f" since {record['started']}" if record.get("started") else ""
    what = f" ({record['doing']})" if record.get("doing") else ""
    return f"pid {record.get('pid', '?')} on host {record.get('host', '?')}{what}{since}"


def _refusal(study_dir: Path, record: dict[str, object], doing: str) -> str:
    elsewhere = (
        f"; if no driver runs there any more, delete {study_dir / LOCK_FILE}"
        if record.get("host", "?") != socket.gethostname()
        else ""
    )
    return (
        f"cannot {doing} study {study_dir.name!r}: it is being driven by "
        f"{driver_words(record)}; wait for it to end or stop it (Ctrl-C) first{elsewhere}"
    )
