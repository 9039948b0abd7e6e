"""A trial's newest checkpoint unreadable: the older kept one is read instead, and the note
says which was skipped and why; none readable is a clear error. Real checkpoint folders as
Tune lays them out (`checkpoint_<index>/state.pt`, written by torch.save), really corrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from raystudy.tune.checkpoints import (
    CHECKPOINT_FILE,
    CheckpointUnreadable,
    older_checkpoints,
    restore_state,
)


def _checkpoints(trial: Path, steps: list[int]) -> list[Path]:
    folders = []
    for index, step in enumerate(steps):
        folder = trial / f"checkpoint_{index:06d}"
        folder.mkdir(parents=True)
        model = torch.nn.Linear(3, 2)
        torch.save({"step": step, "model": model.state_dict()}, folder / CHECKPOINT_FILE)
        folders.append(folder)
    return folders


def test_the_newest_readable_checkpoint_is_read_and_a_skip_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older, newest = _checkpoints(tmp_path, [4, 8])
    state, note = restore_state(newest)
    assert state["step"] == 8 and note is None
    # a write cut short (full disk, node lost): half the file
    data = (newest / CHECKPOINT_FILE).read_bytes()
    (newest / CHECKPOINT_FILE).write_bytes(data[: len(data) // 2])
    state, note = restore_state(newest)
    assert state["step"] == 4 and isinstance(state["model"]["weight"], torch.Tensor)
    assert note is not None and str(newest / CHECKPOINT_FILE) in note and str(older) in note
    assert "(step 4)" in note
    assert "newest checkpoint is unreadable" in capsys.readouterr().err


def test_no_readable_checkpoint_names_each_one_and_the_way_out(tmp_path: Path) -> None:
    older, newest = _checkpoints(tmp_path, [4, 8])
    (newest / CHECKPOINT_FILE).write_bytes(b"not a checkpoint")
    (older / CHECKPOINT_FILE).unlink()
    with pytest.raises(CheckpointUnreadable) as failed:
        restore_state(newest)
    message = str(failed.value)
    assert str(newest / CHECKPOINT_FILE) in message and str(older / CHECKPOINT_FILE) in message
    assert "--restart-errored" in message


def test_only_older_checkpoints_of_the_same_trial_are_candidates(tmp_path: Path) -> None:
    folders = _checkpoints(tmp_path, [2, 4, 6, 8])
    (tmp_path / "checkpoint_tmp_abc").mkdir()  # Tune's temporary folders are not checkpoints
    assert older_checkpoints(folders[2]) == [folders[1], folders[0]]
    assert older_checkpoints(folders[0]) == []
