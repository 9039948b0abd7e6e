"""What a study run shows on the terminal: a live display of its trials, while everything
else the driver process prints (Ray, Tune's tables, worker output) goes to a log in the
study folder (`<study>/logs/<command>-<time>.log`), which the run's summary names
(`runs.run_watched`, `runs.resume_watched`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from raystudy.study.folder import StudyError
from raystudy.terminal.capture import CapturedOutput, captured_output, terminal_stream
from raystudy.terminal.display import StudyDisplay
from raystudy.tune.cluster import connected, disconnect
from raystudy.tune.progress import progress_sink

#: The folder of a study that its runs' logs are in.
LOGS_DIR = "logs"

__all__ = ["LOGS_DIR", "StudyDisplay", "log_path", "watched"]


def log_path(study_dir: Path, command: str) -> Path:
    return study_dir / LOGS_DIR / f"{command}-{datetime.now():%Y%m%d-%H%M%S}.log"


@contextlib.contextmanager
def watched(
    name: str,
    total: int,
    *,
    command: str,
    metric: str | None = None,
    study_dir: Path | None = None,
) -> Iterator[CapturedOutput]:
    """Show a study's progress while the block runs it, its other output captured to a log.

    The log starts in the temporary folder and moves into the study folder when it exists:
    at once for `study_dir` (a resume), else when the driver says the folder was made
    (`CapturedOutput.move_to`, passed as `run_study`'s `on_study_dir`). A study refused
    before it had a folder leaves no log: its error says what is wrong.
    """
    stream = terminal_stream()
    captured = None
    ray_was_up = connected()
    try:
        with (
            StudyDisplay(stream, total, metric=metric) as display,
            captured_output(name) as captured,
            progress_sink(display),
        ):
            if study_dir is not None:
                captured.move_to(log_path(study_dir, command))
            yield captured
            if not ray_was_up:
                # Ray prints its workers' late lines ("(_trainable pid=...) Checkpoint
                # successfully created at: ...") until it stops, at exit otherwise: stopped
                # here, while they still go to the log, none prints after the run's summary.
                disconnect()
    except BaseException as exc:
        if captured is not None and captured.path.parent.name != LOGS_DIR:
            if isinstance(exc, StudyError):
                captured.path.unlink(missing_ok=True)
            else:
                print(f"Output of Ray and Tune: {captured.path}", file=sys.stderr)
        raise
    finally:
        if stream is not sys.stdout:
            stream.close()
        if captured is not None and captured.cut_short is not None:
            # The summary names the log: it must not be read as the run's whole output.
            print(f"Warning: {captured.cut_short}", file=sys.stderr, flush=True)
