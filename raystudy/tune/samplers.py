"""Optuna samplers as a study's searcher holds them: picklable, because Tune pickles the
searcher into `tuner.pkl` when the Tuner is made and into the searcher's state at every save.

Optuna 5.1's NSGA-II sampler keeps a `threading.Lock` among its attributes, which no pickle
can hold ("cannot pickle '_thread.lock' object" when the Tuner is made): every multi-objective
study failed before its first trial. The lock guards the sampler within one process, so a
sampler unpickled elsewhere gets a fresh one; nothing else of its state changes.
"""

from __future__ import annotations

import threading
from typing import Any

import optuna

_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())
#: Where the pickle records which attributes were locks (True: reentrant).
_LOCKS = "_locks_left_out"


class PicklableNSGAIISampler(optuna.samplers.NSGAIISampler):
    """`NSGAIISampler` whose locks are left out of its pickle and made anew when it is read."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        locks = {
            k: isinstance(v, _RLOCK) for k, v in state.items() if isinstance(v, _LOCK | _RLOCK)
        }
        for key in locks:
            del state[key]
        state[_LOCKS] = locks
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        for key, reentrant in state.pop(_LOCKS, {}).items():
            state[key] = threading.RLock() if reentrant else threading.Lock()
        self.__dict__.update(state)
