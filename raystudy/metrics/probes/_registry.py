"""The registry of downstream probes: regressors from representations to factors.

A probe is a class built as ``cls(seed=..., n_jobs=...)`` with ``fit(X, Y) -> self`` and
``predict(X) -> (N, K)``, where X is (N, D) codes and Y is (N, K) targets in [0, 1]. A new
probe is one module that decorates its class with :func:`register_probe` and is imported
by ``raystudy/metrics/probes/__init__.py``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from raystudy.registry import Registry


class Probe(Protocol):
    """What :func:`raystudy.metrics.transfer.transfer` needs from a probe."""

    def fit(self, X: ArrayLike, Y: ArrayLike) -> Probe: ...

    def predict(self, X: ArrayLike) -> NDArray[np.float64]: ...


PROBES: Registry[type] = Registry("probe")

#: Class decorator adding a probe to :data:`PROBES` under ``name``.
register_probe = PROBES.register


def get_probe(name: str, seed: int = 0, n_jobs: int = 1) -> Probe:
    """A fresh, unfitted probe ``name`` with the given seed and thread count."""
    return PROBES.get(name)(seed=seed, n_jobs=n_jobs)


def as_targets(Y: ArrayLike) -> NDArray[np.float64]:
    """Targets as a (N, K) float array; a 1-D vector becomes one column."""
    Y = np.asarray(Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


def probe_applies(name: str, code_is_factor_sized: bool) -> bool:
    """Whether probe ``name`` scores a model: a readout that reads the code as factors
    (``reads_factor_code``, e.g. ``own``) only a model with one code dimension per factor."""
    return code_is_factor_sized or not getattr(PROBES.get(name), "reads_factor_code", False)
