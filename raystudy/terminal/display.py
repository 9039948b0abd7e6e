"""The live view of a running study: one progress bar on a terminal, plain periodic lines
anywhere else (CI, a pipe, nohup), and each failure at once, with its error and its log.

Drawn with rich (https://rich.readthedocs.io): a `Progress` on an interactive console; its
`Console.is_terminal` decides which of the two views a run gets.
"""

from __future__ import annotations

import math
import time
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from raystudy.tune.progress import Snapshot, TrialFailure
from raystudy.tune.state import ERROR, FINISHED, PENDING, RUNNING, STOPPED, outcome_word

#: A plain view prints a line at most this often, and only when something changed.
PLAIN_EVERY_S = 30.0
#: Outcomes a trial does not leave in this run: what the bar counts as done.
ENDED = (FINISHED, STOPPED, ERROR)


def clock(seconds: float) -> str:
    """1:05:09, 5:09 or 0:09."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class StudyDisplay:
    """Shows `total` trials' progress (Tune trials: stacked models count as one) on `stream`.

    `metric` names the searched score whose latest and best value are shown, if any. The ETA
    comes from the trials that ended during this run: their rate, over what is left.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int,
        *,
        metric: str | None = None,
        plain_every_s: float = PLAIN_EVERY_S,
        force_terminal: bool | None = None,
        width: int | None = None,
    ) -> None:
        self.console = Console(
            file=stream, force_terminal=force_terminal, width=width, highlight=False
        )
        self.total = total
        self.metric = metric
        self.plain_every_s = plain_every_s
        self.snapshot = Snapshot()
        self._started = time.monotonic()
        self._ended_at_start: int | None = None
        # Never printed: the first state prints whatever the clock reads (monotonic time starts
        # near 0 at boot, so 0.0 here would hold back the first line on a machine up for less
        # than the interval).
        self._printed: tuple[str, float] = ("", -math.inf)
        self._progress: Progress | None = None
        self._task = None

    @property
    def interactive(self) -> bool:
        return self.console.is_terminal

    def __enter__(self) -> StudyDisplay:
        if self.interactive:
            self._progress = Progress(
                TextColumn("[bold]trials"),
                BarColumn(bar_width=30),
                MofNCompleteColumn(),
                TextColumn("{task.fields[states]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}"),
                console=self.console,
                # Output the driver prints goes to the study's log, never through the bar.
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=2,
            )
            self._progress.start()
            self._task = self._progress.add_task("trials", total=self.total, states="", eta="")
        return self

    def __exit__(self, *exc_info: object) -> None:  # stops the same way whatever ended it
        if self._progress is not None:
            self._refresh()
            self._progress.stop()
        else:
            self._plain(force=True)

    # The ProgressSink protocol (raystudy.tune.progress).
    def update(self, snapshot: Snapshot) -> None:
        if self._ended_at_start is None:  # a resumed study starts with trials already ended
            self._ended_at_start = sum(snapshot.counts[k] for k in ENDED)
        self.snapshot = snapshot
        if self._progress is not None:
            self._refresh()
        else:
            self._plain()

    def failure(self, failure: TrialFailure) -> None:
        what = "failed" if failure.final else "failed, retrying"
        self.console.print(
            f"[red]Trial {escape(failure.name)} {what}:[/red] {escape(failure.error)}",
            soft_wrap=True,
        )
        if failure.log:
            self.console.print(f"  full error: {escape(failure.log)}", soft_wrap=True)

    # Views.
    def ended(self) -> int:
        return sum(self.snapshot.counts[k] for k in ENDED)

    def states(self) -> str:
        counts = self.snapshot.counts
        parts = [f"{counts[RUNNING]} {outcome_word(RUNNING)}"]
        parts += [f"{counts[ERROR]} {outcome_word(ERROR)}"] if counts[ERROR] else []
        parts += [f"{counts[STOPPED]} {outcome_word(STOPPED)}"] if counts[STOPPED] else []
        parts += [f"{counts[PENDING]} waiting"] if counts[PENDING] else []
        return ", ".join(parts)

    def eta(self) -> str:
        elapsed = time.monotonic() - self._started
        done_here = self.ended() - (self._ended_at_start or 0)
        left = max(0, self.total - self.ended())
        if not left:
            return ""
        if done_here <= 0 or elapsed <= 0:
            return "ETA after the first trial"
        return f"ETA {clock(left * elapsed / done_here)}"

    def score(self) -> str:
        s = self.snapshot
        if not self.metric or s.latest is None:
            return ""
        return f"{self.metric} latest {s.latest:.4g}, best {s.best:.4g}"

    def line(self) -> str:
        elapsed = clock(time.monotonic() - self._started)
        parts = [f"{self.ended()}/{self.total} trials done", self.states(), elapsed, self.eta()]
        return " | ".join(p for p in (*parts, self.score()) if p)

    def _refresh(self) -> None:
        assert self._progress is not None and self._task is not None
        states = " ".join(p for p in (self.states(), self.score()) if p)
        self._progress.update(
            self._task, completed=self.ended(), states=escape(states), eta=escape(self.eta())
        )

    def _plain(self, *, force: bool = False) -> None:
        key = f"{self.snapshot.counts}"
        last_key, last_at = self._printed
        now = time.monotonic()
        if not force and (key == last_key or now - last_at < self.plain_every_s):
            return
        self._printed = (key, now)
        self.console.print(self.line(), soft_wrap=True)
