"""Progress of a command made of steps (`raystudy analyze`): on a terminal a spinner naming
the step under way, elsewhere a line per step; each with the time since the command began.
Written to stderr, so that the command's own output can be piped alone."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.status import Status


class StepLines:
    """Call it with each step's description as the step starts (a `Progress` callable)."""

    def __init__(self, command: str, console: Console | None = None) -> None:
        self.command = command
        self.console = console or Console(stderr=True, highlight=False)
        self._started = time.monotonic()
        self._status: Status | None = None

    def __enter__(self) -> StepLines:
        if self.console.is_terminal:
            self._status = self.console.status(f"{self.command}: starting")
            self._status.start()
        return self

    def __call__(self, message: str) -> None:
        line = f"{self.command} [{time.monotonic() - self._started:5.1f} s] {message}"
        if self._status is not None:
            self._status.update(escape(line))
        else:
            self.console.print(escape(line), soft_wrap=True)

    def __exit__(self, *exc_info: object) -> None:  # stops the same way whatever ended it
        if self._status is not None:
            self._status.stop()
