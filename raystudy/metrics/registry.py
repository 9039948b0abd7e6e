"""The registry of representation metrics a trial computes, by name.

Every entry is called as ``fn(codes_train, factors_train, codes_test, factors_test, seed=...,
n_jobs=...)`` with codes (N, D) representation means and factors (N, K) integer indices, and
returns ``dict[str, float]`` with short keys (the caller prefixes ``dis/``). A metric that
needs only one sample ignores the other. A new metric is one module that decorates its
entry point with :func:`register_metric` and is imported by ``raystudy/metrics/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from raystudy.registry import Registry

MetricFn = Callable[..., dict[str, float]]

METRICS: Registry[MetricFn] = Registry("metric")

#: Function decorator adding a metric to :data:`METRICS` under ``name``.
register_metric = METRICS.register


def get_metric(name: str) -> MetricFn:
    """The metric registered as ``name``; ValueError naming the known ones otherwise."""
    return METRICS.get(name)
