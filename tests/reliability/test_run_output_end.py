"""A study's terminal output ends with its own summary: Ray forwards its workers' output to the
driver until Ray stops, and a line it delivers late (`(_trainable pid=...) Checkpoint
successfully created at: ...`, printed when a trial saves) must not follow the summary, on a
terminal or down a pipe into a file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from faults import cli
from pty_run import run_on_pty, screen_lines
from tiny import LIGHT, SMOKE, tiny

#: What Ray prints of its workers, prefixed with the worker's name and pid.
RAY_LINES = ("pid=", "Checkpoint successfully created")


def _command(tmp_path: Path, name: str) -> list[str]:
    overrides = tiny(
        name,
        LIGHT,
        "resources={cpu: 1, gpu: 0}",
        # two trials, each saving checkpoints (TINY's train.checkpoint_every)
        "grid={model: [{objective: beta_vae, beta: [1, 4]}]}",
    )
    return cli(
        "run", str(SMOKE), "--output", str(tmp_path), *(a for o in overrides for a in ("--set", o))
    )


def _ends_with_summary(lines: list[str], name: str) -> None:
    shown = [line for line in lines if line.strip()]
    ended = [i for i, line in enumerate(shown) if line.startswith(f"Study {name!r} ended in")]
    assert ended, shown
    tail = shown[ended[-1] :]
    assert tail[-1].startswith("Analysis:"), tail
    assert not any(word in line for line in tail for word in RAY_LINES), tail


@pytest.mark.heavy
def test_the_summary_is_the_last_thing_on_a_terminal(tmp_path: Path) -> None:
    code, raw = run_on_pty(_command(tmp_path, "tail_pty"), timeout=300)
    assert code == 0, raw[-3000:]
    _ends_with_summary(screen_lines(raw), "tail_pty")
    assert not any(word in raw for word in RAY_LINES), raw[-3000:]


@pytest.mark.heavy
def test_the_summary_is_the_last_thing_in_a_file(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as file:
        code = subprocess.run(
            _command(tmp_path, "tail_file"),
            stdin=subprocess.DEVNULL,
            stdout=file,
            stderr=subprocess.STDOUT,
            timeout=300,
        ).returncode
    text = out.read_text()
    assert code == 0, text[-3000:]
    _ends_with_summary(text.splitlines(), "tail_file")
    assert not any(word in text for word in RAY_LINES), text[-3000:]
