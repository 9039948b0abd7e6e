"""A full disk, told apart from every other error.

A write to a full file system fails with ENOSPC ("No space left on device"), or EDQUOT when a
user's quota is spent; SQLite says SQLITE_FULL ("database or disk is full"), which MLflow's
sqlite store and SQLAlchemy pass on only as text. A trial that hits either fails, and so would
every trial after it, so the study stops and says which folder's disk is full
(`raystudy.study.outcome`) rather than failing its trials one by one.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

#: The errnos of a write refused for want of space.
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
#: What the messages of those errors say, where only the text survives (a trial's error as
#: Tune passes it on, an MlflowException wrapping SQLite's SQLITE_FULL).
FULL_WORDS = ("No space left on device", "database or disk is full", "Disk quota exceeded")


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from or while handling, is a full disk."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in FULL_ERRNOS:
            return True
        if says_disk_full(str(current)):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def says_disk_full(text: str) -> bool:
    """Whether an error's text is a full disk's."""
    return any(words in text for words in FULL_WORDS)


def free_space(path: Path) -> str:
    """The space left on the file system holding `path` (or its nearest existing parent),
    as a person reads it."""
    here = path
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        free = shutil.disk_usage(here).free
    except OSError:
        return "unknown"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if free < 1024 or unit == "GiB":
            return f"{free:.0f} {unit}" if unit == "bytes" else f"{free:.1f} {unit}"
        free /= 1024
    return "unknown"  # not reached: the loop returns at GiB
