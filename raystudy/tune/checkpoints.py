"""Reading a trial's checkpoint back, falling back to the older kept one when the newest is
unreadable (a disk that filled or a node that died while it was written, a corrupt file).

Tune keeps each trial's two newest checkpoints (`CheckpointConfig(num_to_keep=2)`) as
`<trial dir>/checkpoint_<index>/state.pt` and hands a restarted trial only the newest. A
newest file that `torch.load` cannot read would fail the trial at every retry, although the
one before it is intact; this reads the newest readable one instead and says which it took.
No Ray import: the trainable passes the newest checkpoint's folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import torch

#: The file a trial's checkpoint state is saved to inside Tune's checkpoint folder.
CHECKPOINT_FILE = "state.pt"

_INDEX = re.compile(r"checkpoint_(\d+)$")


class CheckpointUnreadable(RuntimeError):
    """No checkpoint of the trial could be read; the message names each and why."""


def load_state(path: Path) -> dict[str, Any]:
    """The state saved in checkpoint folder `path` (tensors and plain data only)."""
    return torch.load(path / CHECKPOINT_FILE, map_location="cpu", weights_only=True)


def older_checkpoints(newest: Path) -> list[Path]:
    """Checkpoint folders beside `newest` with a lower index, newest first."""
    match = _INDEX.search(newest.name)
    if match is None or not newest.parent.is_dir():
        return []
    index = int(match.group(1))
    older = []
    for folder in newest.parent.iterdir():
        other = _INDEX.search(folder.name)
        if other is not None and int(other.group(1)) < index and folder.is_dir():
            older.append((int(other.group(1)), folder))
    return [folder for _, folder in sorted(older, reverse=True)]


def restore_state(newest: Path) -> tuple[dict[str, Any], str | None]:
    """The newest readable state among `newest` and the older kept checkpoints beside it,
    and a note saying what was skipped (None when the newest was read).

    CheckpointUnreadable, naming every checkpoint tried and its error, when none can be
    read: the trial then fails with that message instead of an unpickling traceback.
    """
    errors = []
    for folder in [newest, *older_checkpoints(newest)]:
        try:
            state = load_state(folder)
        except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError, ...
            errors.append(f"{folder / CHECKPOINT_FILE}: {type(exc).__name__}: {exc}"[:500])
            continue
        if folder == newest:
            return state, None
        note = (
            f"the newest checkpoint is unreadable ({'; '.join(errors)}); resumed from the "
            f"older {folder} (step {state.get('step', '?')})"
        )
        print(f"raystudy: {note}", file=sys.stderr, flush=True)
        return state, note
    raise CheckpointUnreadable(
        "no checkpoint of this trial can be read: " + "; ".join(errors) + " (run `raystudy "
        "resume --restart-errored` to train the trial again from scratch)"
    )
