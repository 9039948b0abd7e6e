"""A trial's wall-time limit (`execution.trial_time_limit_s`): a hung or runaway trial ends as
failed, with its reason on its runs, instead of holding its resources for ever.

Tune stops trials only on what they report, and a hung trial reports nothing. A watchdog
thread beside the trial raises `TrialTimedOut` in the trial's thread when the limit passes;
the trial's usual error path then fails its runs with the error and the tag
`raystudy.timed_out_after_s`. Python delivers such an exception only between bytecodes, so a
thread stuck inside C (a read that never returns, a deadlocked lock) does not see it: after a
grace period the watchdog fails the runs itself (`on_stuck`) and ends the worker process,
which Tune records as a failed trial (retried from its checkpoint up to
`execution.max_failures`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterator

#: Seconds a trial gets after the limit to leave through its own error path.
GRACE_S = 30.0


#: The limit of the block each thread runs under: the watchdog raises the bare class in the
#: trial's thread, which builds the exception there, with no arguments.
_LIMITS: dict[int, float] = {}


class TrialTimedOut(Exception):
    """A trial ran past `execution.trial_time_limit_s`."""

    def __init__(self, limit_s: float | None = None) -> None:
        if limit_s is None:
            limit_s = _LIMITS.get(threading.get_ident(), float("nan"))
        super().__init__(f"the trial ran past execution.trial_time_limit_s ({limit_s:g} s)")
        self.limit_s = limit_s


@contextlib.contextmanager
def time_limit(
    limit_s: float | None,
    on_stuck: Callable[[TrialTimedOut], None],
    grace_s: float = GRACE_S,
) -> Iterator[None]:
    """Run the block with a wall-time limit (None: none).

    At `limit_s` the block's thread gets `TrialTimedOut`; if the block has still not left
    `grace_s` later, `on_stuck` is called with the error (to record it) and the process
    exits with status 1.
    """
    if limit_s is None:
        yield
        return
    target = threading.get_ident()
    left = threading.Event()
    fired = threading.Event()

    def watch() -> None:
        if left.wait(limit_s):
            return
        error = TrialTimedOut(limit_s)
        fired.set()
        # The trial's thread raises it at its next bytecode (PyThreadState_SetAsyncExc).
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(target), ctypes.py_object(TrialTimedOut)
        )
        if left.wait(grace_s):
            return
        print(
            f"raystudy: {error}, and it did not stop within {grace_s:g} s (stuck outside "
            "Python): its runs are failed and its worker process ends",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(Exception):
            on_stuck(error)
        os._exit(1)

    _LIMITS[target] = limit_s
    watcher = threading.Thread(target=watch, name="raystudy-time-limit", daemon=True)
    watcher.start()
    try:
        yield
    except Exception as exc:
        if fired.is_set() and not isinstance(exc, TrialTimedOut):
            # It landed inside a library that wrapped it (MLflow's store turns any error in
            # its database session into an MlflowException): the trial still timed out.
            raise TrialTimedOut(limit_s) from exc
        raise
    finally:
        left.set()
        _LIMITS.pop(target, None)
