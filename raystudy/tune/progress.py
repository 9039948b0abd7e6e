"""What the driver's display hears of a running study: trial counts by outcome, failures and
retries as they happen, and the search metric's latest value, from a Ray Tune callback.

The callback is part of the study's RunConfig, so Tune saves it with the experiment and a
resumed study has it too. It holds no display: it forwards to the sink installed around
`tuner.fit()` (`progress_sink`), and without one it does nothing, so a saved callback never
drags a terminal into Tune's pickles.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ray import tune

from raystudy.disk_full import says_disk_full
from raystudy.tune.state import ERROR, trial_outcome

#: Counting every trial's outcome is O(trials); Tune's loop steps many times a second.
_COUNT_EVERY_S = 0.5


@dataclass(frozen=True)
class TrialFailure:
    """A trial that failed (`final`) or will be retried: its name, the last line of its
    error, and the file holding the whole traceback."""

    name: str
    error: str
    log: str | None
    final: bool


@dataclass(frozen=True)
class Snapshot:
    """The study as Tune sees it now: outcome -> trial count (`raystudy.tune.state`
    vocabulary), and the search metric's latest and best value where it has one."""

    counts: Counter[str] = field(default_factory=Counter)
    latest: float | None = None
    best: float | None = None


class ProgressSink(Protocol):
    def update(self, snapshot: Snapshot) -> None: ...

    def failure(self, failure: TrialFailure) -> None: ...


_SINK: ProgressSink | None = None


@contextlib.contextmanager
def progress_sink(sink: ProgressSink | None) -> Iterator[None]:
    """Send the study's progress to `sink` while the block runs (None: nowhere)."""
    global _SINK
    previous, _SINK = _SINK, sink
    try:
        yield
    finally:
        _SINK = previous


class FullDiskWatch:
    """The first trial that failed for a full disk while `watching_for_full_disk` runs, told
    by the callback whether or not a display listens: the driver stops the study on it."""

    def __init__(self) -> None:
        self.seen = threading.Event()
        self.failure: TrialFailure | None = None

    def tell(self, failure: TrialFailure) -> None:
        if self.failure is None:
            self.failure = failure
        self.seen.set()


_FULL_DISK: FullDiskWatch | None = None


@contextlib.contextmanager
def watching_for_full_disk() -> Iterator[FullDiskWatch]:
    """While the block runs, trial failures that say the disk is full are told to the
    returned watch."""
    global _FULL_DISK
    previous, _FULL_DISK = _FULL_DISK, FullDiskWatch()
    try:
        yield _FULL_DISK
    finally:
        _FULL_DISK = previous


def error_line(path: str | None) -> str:
    """The last non-blank line of a trial's error file: the exception and its message."""
    if not path:
        return "(no error file)"
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"(error file unreadable: {exc.strerror})"
    return next((line.strip() for line in reversed(lines) if line.strip()), "(empty error file)")


class ProgressCallback(tune.Callback):
    """Counts trials by outcome after Tune's loop steps (at most every half second) and
    passes failures on at once. `metric`/`mode`: the searched score, if the search has one."""

    def __init__(self, metric: str | None = None, mode: str | None = None) -> None:
        self.metric = metric
        self.mode = mode
        self._latest: float | None = None
        self._best: float | None = None
        self._counted = 0.0

    def __getstate__(self) -> dict[str, Any]:
        # Saved with the experiment: a resumed study starts its own count.
        return {"metric": self.metric, "mode": self.mode}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["metric"], state["mode"])  # type: ignore[misc]

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        now = time.monotonic()
        if _SINK is None or now - self._counted < _COUNT_EVERY_S:
            return
        self._counted = now
        _SINK.update(self.snapshot(trials))

    def snapshot(self, trials: list[Any]) -> Snapshot:
        counts: Counter[str] = Counter(
            trial_outcome(t.last_result or {}, failed=t.status == ERROR, tune_status=t.status)
            for t in trials
        )
        return Snapshot(counts, self._latest, self._best)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        value = result.get(self.metric) if self.metric else None
        if not isinstance(value, int | float) or not math.isfinite(value):
            return
        self._latest = float(value)
        better = max if self.mode == "max" else min
        self._best = self._latest if self._best is None else better(self._best, self._latest)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tell(trial, final=True)
        if _SINK is not None:  # the count moves at once too, not half a second later
            _SINK.update(self.snapshot(trials))

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._tell(trial, final=False)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        if _SINK is not None:
            _SINK.update(self.snapshot(trials))

    def _tell(self, trial: Any, *, final: bool) -> None:
        if _SINK is None and _FULL_DISK is None:
            return
        log = trial.error_file
        failure = TrialFailure(str(trial), error_line(log), log, final)
        if _FULL_DISK is not None and says_disk_full(_error_text(log)):
            failure = dataclasses.replace(failure, error=_full_disk_line(log))
            _FULL_DISK.tell(failure)
        if _SINK is not None:
            _SINK.failure(failure)


def _error_text(path: str | None) -> str:
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _full_disk_line(path: str | None) -> str:
    """The line of a trial's error file that says the disk is full (the last line of a
    database error is only where to read about it)."""
    lines = [line.strip() for line in _error_text(path).splitlines()]
    return next((line for line in reversed(lines) if says_disk_full(line)), error_line(path))
