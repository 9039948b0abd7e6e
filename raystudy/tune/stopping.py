"""Ending a Tune run as Ctrl-C does, so that `resume` continues its running trials: once the
study's time budget is spent (`time_budget`), or once a trial fails for a full disk
(`stop_on_full_disk`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from raystudy.tune.progress import FullDiskWatch, watching_for_full_disk

#: Tune ends a run on this signal as on Ctrl-C (`ray.tune.tune._setup_signal_catching`).
_TUNE_STOP_SIGNAL = getattr(signal, "SIGUSR1", None)


def budget_by_signal() -> bool:
    """Whether `time_budget` can end the study as Ctrl-C does (Tune catches signals only
    when it runs in the main thread); if not, Tune's own time budget is used."""
    return _TUNE_STOP_SIGNAL is not None and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """End the Tune run inside after `seconds` as Ctrl-C does: Tune saves the study with its
    running trials unfinished, and `resume` continues them from their checkpoints. Tune's own
    `time_budget_s` marks them TERMINATED instead, which a resume skips as finished.

    The signal is sent once Tune's handler is in place, and again every few seconds until the
    run ends (a handler left by an earlier run in the process would swallow the first one).
    """
    if seconds is None or not budget_by_signal():
        yield
        return
    over = threading.Event()

    def stop() -> None:
        if not over.wait(seconds):
            _signal_until(over)

    with _running(stop, "raystudy-time-budget", over):
        yield


@contextlib.contextmanager
def stop_on_full_disk() -> Iterator[FullDiskWatch]:
    """End the Tune run inside as Ctrl-C does once a trial fails for a full disk: every trial
    after it would fail too. The returned watch names that trial (its `failure`); Tune saves
    what it can, and `resume` continues once there is space."""
    with watching_for_full_disk() as watch:
        if not budget_by_signal():  # the trials fail one by one; the driver still says why
            yield watch
            return
        over = threading.Event()

        def stop() -> None:
            while not over.is_set():
                if watch.seen.wait(0.5):
                    _signal_until(over)
                    return

        with _running(stop, "raystudy-full-disk", over):
            yield watch


def _signal_until(over: threading.Event) -> None:
    """Send Tune's stop signal once its handler is in place, and again every few seconds
    until `over` (a handler left by an earlier run in the process would swallow the first)."""
    while not over.is_set():
        if signal.getsignal(_TUNE_STOP_SIGNAL) not in (signal.SIG_DFL, signal.SIG_IGN, None):
            signal.raise_signal(_TUNE_STOP_SIGNAL)
        over.wait(2.0)


@contextlib.contextmanager
def _running(target: Callable[[], None], name: str, over: threading.Event) -> Iterator[None]:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        over.set()
        thread.join()
