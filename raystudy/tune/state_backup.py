"""A copy of Tune's last readable experiment state, kept beside it, so that a full disk cannot
take a study's resumability with it.

Tune rewrites its experiment state (`experiment_state-*.json`, the search's state) in place, by
copying it from a staging folder: on a disk that fills up the copy stops part-way and leaves the
file cut short (measured with Ray 2.60 on a tmpfs filled mid-study: an unterminated JSON, and a
study that could no longer be resumed). While a study runs, `StateBackupCallback` copies the
newest session's files, as one set, once they have changed, stopped changing and each reads
back whole, into `tune/.last-good/`: each written to a temporary name and renamed over the older
copy, so a copy cut short by the full disk never replaces a whole one. `restore_damaged` puts
a damaged session's set back before `resume` reads it. Trials that finished after the copy was
made are not trained again: their MLflow runs say they finished (`raystudy.trials.finish`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickletools
import re
import shutil
import time
from pathlib import Path
from typing import Any

from ray import tune

from raystudy.tune.state import BACKUP_DIR

__all__ = [
    "BACKUP_DIR",
    "StateBackupCallback",
    "back_up",
    "reads_whole",
    "restore_damaged",
    "session_sets",
]
#: The files Tune rewrites while the study runs, one set per driver session (named by its
#: start time); the trials' own folders hold results and checkpoints, written to new files.
_SESSION_FILE = re.compile(
    r"^(experiment_state|basic-variant-state|search_gen_state|searcher-state|callback-states)"
    r"-(?P<session>[0-9_-]+)\.(json|pkl)$"
)
#: How often the driver's Tune loop looks for changed state files.
_EVERY_S = 2.0


def session_sets(tune_dir: Path) -> dict[str, list[Path]]:
    """The state files of each driver session in `tune_dir`: session -> its files."""
    sets: dict[str, list[Path]] = {}
    for path in sorted(tune_dir.glob("*-*.*")) if tune_dir.is_dir() else []:
        match = _SESSION_FILE.match(path.name)
        if match and path.is_file():
            sets.setdefault(match["session"], []).append(path)
    return sets


def reads_whole(path: Path) -> bool:
    """Whether `path` reads back as the JSON or pickle Tune wrote (one cut short does not;
    Tune writes the basic variant generator's state as a pickle under a .json name)."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    try:
        json.loads(data)
        return True
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    try:
        # Walked opcode by opcode, never unpickled (nothing in it runs): a pickle cut short
        # ends before its STOP opcode.
        for _ in pickletools.genops(data):
            pass
    except Exception:
        return False
    return True


def _stamp(files: list[Path]) -> tuple[tuple[str, int, int], ...] | None:
    try:
        return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    except OSError:
        return None


def back_up(tune_dir: Path, seen: dict[str, Any]) -> None:
    """Copy the newest session's state files into the backup folder, as one set, when they
    changed since the last copy, have stayed as they are since the last look (Tune copies
    them one by one: a set mid-copy mixes two saves) and each reads back whole. Each copy is
    written to a temporary name and renamed over the old one, so a copy that the full disk
    cuts short never replaces a whole one. `seen` carries what was seen between calls."""
    sets = session_sets(tune_dir)
    if not sets:
        return
    session = max(sets)
    files = sets[session]
    stamp = _stamp(files)
    last_look, seen["look"] = seen.get("look"), stamp
    if stamp is None or stamp != last_look or seen.get("kept") == stamp:
        return
    if not all(reads_whole(path) for path in files):
        return
    backup = tune_dir / BACKUP_DIR
    try:
        backup.mkdir(exist_ok=True)
        for path in files:
            temp = backup / f".{path.name}.partial"
            shutil.copyfile(path, temp)
            os.replace(temp, backup / path.name)
    except OSError:  # a full disk: what was kept before stays, whole
        for temp in backup.glob(".*.partial"):
            with contextlib.suppress(OSError):
                temp.unlink()
        return
    seen["kept"] = stamp


def restore_damaged(tune_dir: Path) -> list[str]:
    """Make the state Tune resumes from whole again: a session whose files do not all read
    back whole gets its kept copies put back, all of them (the experiment state and the
    search's state must come from one save), or, with none kept, is moved aside to
    `*.damaged` so that Tune reads the whole session before it, if there is one. The names
    of the files changed."""
    backup = session_sets(tune_dir / BACKUP_DIR)
    changed = []
    sessions = sorted(session_sets(tune_dir).items())
    whole = {session for session, files in sessions if all(reads_whole(p) for p in files)}
    for session, files in sessions:
        if session in whole:
            continue
        kept = backup.get(session)
        if not kept and not any(older < session for older in whole):
            continue  # nothing to fall back on: left for the error that names it
        if kept:
            for path in files:
                if not any(copy.name == path.name for copy in kept):
                    path.rename(path.with_name(path.name + ".damaged"))
            for copy in kept:
                temp = tune_dir / f".{copy.name}.restoring"
                shutil.copyfile(copy, temp)
                os.replace(temp, tune_dir / copy.name)
                changed.append(copy.name)
        else:
            for path in files:
                path.rename(path.with_name(path.name + ".damaged"))
                changed.append(path.name)
    return changed


class StateBackupCallback(tune.Callback):
    """Keeps `tune/.last-good/` current from the driver's Tune loop (every few seconds, and at
    the end). Saved with the experiment: a resumed study gets one for its folder as it is now
    (`raystudy.tune.adapter.with_progress`)."""

    def __init__(self, tune_dir: str) -> None:
        self.tune_dir = tune_dir
        self._seen: dict[str, Any] = {}
        self._last = -math.inf  # the first step backs up, whatever the boot-time clock reads

    def __getstate__(self) -> dict[str, Any]:
        return {"tune_dir": self.tune_dir}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["tune_dir"])  # type: ignore[misc]

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        now = time.monotonic()
        if now - self._last >= _EVERY_S:
            self._last = now
            back_up(Path(self.tune_dir), self._seen)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        back_up(Path(self.tune_dir), self._seen)
