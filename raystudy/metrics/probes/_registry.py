"""The registry of downstream probes: regressors from representations to factors.

A probe is a class built as ``cls(seed=..., n_jobs=...)`` with ``fit(X, Y) -> self`` and
``predict(X) -> (N, K)``, where X is (N, D) codes and Y is (N, K) targets in [0, 1]. A probe
that can run on a GPU also takes ``device=`` ("cpu", "cuda") and says how it computes there
with a static ``implementation(device) -> str`` (a run's ``raystudy.probe.<name>`` tag); one
that does not take ``device`` runs on the CPU wherever the scoring runs. A new probe is one
module that decorates its class with :func:`register_probe` and is imported by
``raystudy/metrics/probes/__init__.py``.
"""

from __future__ import annotations

import inspect
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


def get_probe(name: str, seed: int = 0, n_jobs: int = 1, device: str = "cpu") -> Probe:
    """A fresh, unfitted probe ``name`` with the given seed and thread count, on ``device``
    where it takes one (else on the CPU)."""
    cls = PROBES.get(name)
    if takes_device(cls):
        return cls(seed=seed, n_jobs=n_jobs, device=device)
    return cls(seed=seed, n_jobs=n_jobs)


def takes_device(cls: type) -> bool:
    """Whether probe class ``cls`` can be told where to run."""
    return "device" in inspect.signature(cls).parameters


def probe_implementation(name: str, device: str) -> str:
    """How probe ``name`` computes when scored on ``device`` (its ``implementation``, else
    its class on the CPU), for a run's tags."""
    cls = PROBES.get(name)
    describe = getattr(cls, "implementation", None)
    if describe is None:
        return f"{cls.__module__}.{cls.__qualname__} on cpu"
    return str(describe(device) if takes_device(cls) else describe())


def as_targets(Y: ArrayLike) -> NDArray[np.float64]:
    """Targets as a (N, K) float array; a 1-D vector becomes one column."""
    Y = np.asarray(Y, dtype=np.float64)
    return Y[:, None] if Y.ndim == 1 else Y


def probe_applies(name: str, code_is_factor_sized: bool) -> bool:
    """Whether probe ``name`` scores a model: a readout that reads the code as factors
    (``reads_factor_code``, e.g. ``own``) only a model with one code dimension per factor."""
    return code_is_factor_sized or not getattr(PROBES.get(name), "reads_factor_code", False)
