"""Everything a study's driver process prints, into a log file: Ray's start-up messages, Tune's
status tables, the worker output Ray forwards to the driver, Python warnings.

Redirected at the file-descriptor level (so C extensions and the Ray processes started
meanwhile write there too) and at `sys.stdout`/`sys.stderr` (Python writers that hold their
own stream objects). The terminal stream is taken first, from a copy of the original
descriptor, so the display keeps writing to the terminal while the rest goes to the log.

A log on a disk that fills up stops there (`CapturedOutput.cut_short` says so) instead of
failing the study in whatever printed next: Tune prints from its own loop, and an error raised
there would end the study without saving what its trials finished.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from raystudy.disk_full import FULL_ERRNOS


def terminal_stream() -> TextIO:
    """Where the display writes: a copy of stdout's descriptor (which survives redirecting
    descriptor 1), or the stdout object itself where it has no descriptor (a test runner's
    buffer)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return sys.stdout
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return open(os.dup(fd), "w", buffering=1, encoding=encoding, errors="replace")


class _Log:
    """The log file as `sys.stdout`/`sys.stderr`: writes that find the disk full are dropped,
    and so is everything after them (descriptors 1 and 2 then point at the null device)."""

    def __init__(self, file: TextIO, on_full: Any) -> None:
        self._file = file
        self._on_full = on_full
        self.full = False

    def write(self, text: str) -> int:
        if not self.full:
            self._guarded(lambda: self._file.write(text))
        return len(text)

    def flush(self) -> None:
        if not self.full:
            self._guarded(self._file.flush)

    def _guarded(self, call: Any) -> None:
        try:
            call()
        except OSError as exc:
            if exc.errno not in FULL_ERRNOS:
                raise
            self.full = True
            self._on_full()

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, isatty, ... of the file
        return getattr(self._file, name)


class CapturedOutput:
    """The log the process's output goes to while captured; `move_to` relocates it (the
    study folder exists only once the study has passed its checks)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None
        #: Why the log stops before the run's end (its disk filled), or None.
        self.cut_short: str | None = None

    def start(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = (os.dup(1), os.dup(2))
        self._streams = (sys.stdout, sys.stderr)
        self._open(self.path, "a")

    def _open(self, path: Path, mode: str) -> None:
        log = open(path, mode, buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = _Log(log, self._disk_full)  # type: ignore[assignment]
        if self._file is not None:
            self._close_file()
        self._file, self.path = log, path

    def _disk_full(self) -> None:
        self.cut_short = f"the disk holding {self.path} is full; the log stops there"
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)

    def _close_file(self) -> None:
        assert self._file is not None
        # What the file still buffers cannot be written when its disk is full.
        with contextlib.suppress(OSError):
            self._file.close()

    def move_to(self, path: Path) -> None:
        """Continue the log at `path`, with what it holds so far. Copied, not renamed: the
        two may be on different file systems."""
        old = self.path
        assert self._file is not None
        self._file.flush()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(old.read_bytes())
        self._open(path, "a")
        old.unlink(missing_ok=True)

    def stop(self) -> None:
        if self._file is None:
            return
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved:
            os.close(fd)
        sys.stdout, sys.stderr = self._streams
        self._close_file()
        self._file = None


@contextlib.contextmanager
def captured_output(name: str) -> Iterator[CapturedOutput]:
    """Capture the process's output into a fresh log named after the study, in the system's
    temporary folder until `move_to` puts it where it belongs."""
    handle, temp = tempfile.mkstemp(prefix=f"raystudy-{name}-", suffix=".log")
    os.close(handle)
    captured = CapturedOutput(Path(temp))
    captured.start()
    try:
        yield captured
    finally:
        captured.stop()
