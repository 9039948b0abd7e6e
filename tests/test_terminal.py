"""The run display (raystudy.terminal) without Ray: what it draws on a terminal and writes to
a pipe for given trial counts, its ETA, and the capture of a process's output into a log."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from pty_run import screen_lines
from rich.console import Console

from raystudy.terminal.display import StudyDisplay, clock
from raystudy.terminal.steps import StepLines
from raystudy.tune.progress import Snapshot, TrialFailure, error_line
from raystudy.tune.state import ERROR, FINISHED, RUNNING, STOPPED


def snapshot(**counts: int) -> Snapshot:
    return Snapshot(Counter(counts))


def test_plain_lines_only_when_something_changed_and_at_most_every_interval() -> None:
    out = io.StringIO()
    display = StudyDisplay(out, 10, plain_every_s=3600.0)
    with display:
        assert not display.interactive
        display.update(snapshot(RUNNING=2, PENDING=8))
        display.update(snapshot(RUNNING=2, PENDING=8))  # nothing new, and too soon
        display.update(snapshot(FINISHED=1, RUNNING=2, PENDING=7))  # new, but too soon
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines  # the first state, then the last one when it ends
    assert lines[0].startswith("0/10 trials done | 2 running, 8 waiting")
    assert lines[0].endswith("ETA after the first trial")
    assert lines[1].startswith("1/10 trials done | 2 running, 7 waiting")


def test_the_first_state_prints_on_a_machine_up_for_less_than_the_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Monotonic time counts from boot: 5 s after it, the first line is still printed."""
    import raystudy.terminal.display as display_module

    monkeypatch.setattr(display_module.time, "monotonic", lambda: 5.0)
    out = io.StringIO()
    with StudyDisplay(out, 4, plain_every_s=30.0) as display:
        display.update(snapshot(RUNNING=1, PENDING=3))
        lines = out.getvalue().splitlines()
        assert len(lines) == 1 and lines[0].startswith("0/4 trials done | 1 running, 3 waiting")


def test_every_change_prints_when_the_interval_is_zero() -> None:
    out = io.StringIO()
    with StudyDisplay(out, 4, plain_every_s=0.0) as display:
        for done in range(5):
            display.update(snapshot(FINISHED=done, RUNNING=min(2, 4 - done)))
    lines = out.getvalue().splitlines()
    assert [line.split(" |")[0] for line in lines] == [f"{i}/4 trials done" for i in range(5)] + [
        "4/4 trials done"
    ]
    assert "ETA" not in lines[-1]  # nothing left to wait for


def test_eta_is_the_rate_of_trials_ended_in_this_run_over_what_is_left() -> None:
    display = StudyDisplay(io.StringIO(), 10)
    display.update(snapshot(FINISHED=4, RUNNING=2))  # a resumed study: 4 ended before
    display._started -= 60.0  # a minute later, 2 more have ended here: 30 s each
    display.update(snapshot(FINISHED=5, ERROR=1, RUNNING=2))
    assert display.ended() == 6 and display.eta() == f"ETA {clock(4 * 30.0)}"
    assert display.states() == "2 running, 1 failed"
    assert clock(3725) == "1:02:05" and clock(65) == "1:05"


def test_a_terminal_gets_one_bar_and_each_failure_above_it() -> None:
    out = io.StringIO()
    display = StudyDisplay(out, 3, metric="dis/mig", force_terminal=True, width=120)
    with display:
        assert display.interactive
        display.update(Snapshot(Counter({FINISHED: 1, RUNNING: 1, STOPPED: 1}), 0.25, 0.5))
        display.failure(
            TrialFailure("002_beta=4", "ValueError: bad", "/s/tune/002/error.txt", True)
        )
        display.update(Snapshot(Counter({FINISHED: 1, STOPPED: 1, ERROR: 1}), 0.25, 0.5))
    assert "\x1b[" in out.getvalue()  # drawn with terminal codes, in place
    text = "\n".join(screen_lines(out.getvalue()))
    assert "Trial 002_beta=4 failed: ValueError: bad" in text
    assert "full error: /s/tune/002/error.txt" in text
    final = text.splitlines()[-1]
    assert "3/3" in final and "1 failed" in final and "1 stopped early" in final
    assert "dis/mig latest 0.25, best 0.5" in final


def test_error_line_is_the_last_line_of_the_traceback(tmp_path: Path) -> None:
    path = tmp_path / "error.txt"
    path.write_text("Traceback (most recent call last):\n  File x\nRuntimeError: boom\n\n")
    assert error_line(str(path)) == "RuntimeError: boom"
    assert error_line(None) == "(no error file)"
    assert error_line(str(tmp_path / "missing.txt")).startswith("(error file unreadable")


def test_captured_output_sends_fds_and_python_streams_to_the_log_and_moves_it(
    tmp_path: Path,
) -> None:
    """In a process of its own: the capture redirects descriptors 1 and 2."""
    target = tmp_path / "study" / "logs" / "run.log"
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from raystudy.terminal.capture import captured_output, terminal_stream
        terminal = terminal_stream()
        with captured_output("t") as captured:
            temp = captured.path
            print("python stdout before the move")
            os.write(2, b"fd 2 before the move\\n")
            captured.move_to(Path({str(target)!r}))
            os.system("echo child process output")
            print("python stderr after the move", file=sys.stderr)
            terminal.write("to the terminal\\n")
            terminal.flush()
        print("after the capture; temp gone:", not temp.exists())
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["to the terminal", "after the capture; temp gone: True"]
    assert result.stderr == ""
    assert target.read_text().splitlines() == [
        "python stdout before the move",
        "fd 2 before the move",
        "child process output",
        "python stderr after the move",
    ]


@pytest.mark.parametrize("final", [True, False])
def test_a_retried_failure_says_so(final: bool) -> None:
    out = io.StringIO()
    StudyDisplay(out, 2).failure(TrialFailure("001", "OSError: x", None, final))
    assert out.getvalue().strip() == (
        "Trial 001 failed: OSError: x" if final else "Trial 001 failed, retrying: OSError: x"
    )


def test_steps_are_lines_down_a_pipe_and_one_spinner_on_a_terminal() -> None:
    plain = io.StringIO()
    with StepLines("analyze", Console(file=plain)) as steps:
        steps("reading runs")
        steps("figures")
    lines = plain.getvalue().splitlines()
    assert [line.split("] ")[1] for line in lines] == ["reading runs", "figures"]
    assert all(line.startswith("analyze [") and " s] " in line for line in lines)

    drawn = io.StringIO()
    console = Console(file=drawn, force_terminal=True, width=100)
    with StepLines("analyze", console) as steps:
        steps("reading runs")
        time.sleep(0.3)  # the spinner redraws in its own thread
        steps("figures")
        time.sleep(0.3)
    shown = screen_lines(drawn.getvalue())
    assert "\x1b[" in drawn.getvalue() and len([s for s in shown if s]) <= 1, shown
