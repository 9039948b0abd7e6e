"""The registry of representation metrics a trial computes, by name.

Every entry is called as ``fn(codes_train, factors_train, codes_test, factors_test, seed=...,
n_jobs=...)`` with codes (N, D) representation means and factors (N, K) integer indices, and
returns ``dict[str, float]`` with short keys (the caller prefixes ``dis/``). A metric that
needs only one sample ignores the other. A new metric is one module that decorates its
entry point with :func:`register_metric` and is imported by ``raystudy/metrics/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

MetricFn = Callable[..., dict[str, float]]

METRICS: dict[str, MetricFn] = {}

_F = TypeVar("_F", bound=MetricFn)


def register_metric(name: str) -> Callable[[_F], _F]:
    """Function decorator adding a metric to :data:`METRICS` under ``name``."""

    def add(fn: _F) -> _F:
        if name in METRICS and METRICS[name] is not fn:
            raise ValueError(f"metric {name!r} is already registered to {METRICS[name]!r}")
        METRICS[name] = fn
        return fn

    return add


def get_metric(name: str) -> MetricFn:
    """The metric registered as ``name``; ValueError naming the known ones otherwise."""
    try:
        return METRICS[name]
    except KeyError:
        known = ", ".join(sorted(METRICS)) or "(none)"
        raise ValueError(f"unknown metric {name!r}; registered metrics: {known}") from None
