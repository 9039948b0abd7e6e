"""The registries of representation metrics, by name.

:data:`METRICS` holds the fixed-sample metrics. Every entry is called as
``fn(codes_train, factors_train, codes_test, factors_test, seed=..., n_jobs=..., **options)``
with codes (N, D) representation means and factors (N, K) integer indices, and returns
``dict[str, float]`` with short keys (the caller prefixes ``dis/``). A metric that needs only
one sample ignores the other and sets ``fn.uses_test_set = False``. Every entry declares the
keys it returns as ``fn.outputs`` (a spec's ``search.metric`` is checked against them).

:data:`INTERVENTION_METRICS` holds the metrics that must render observations with chosen
factors fixed. Every entry is called as ``fn(dataset, represent, seed=..., **options)`` with
a :class:`raystudy.data.GroundTruthDataset` and ``represent(images) -> codes``.

A new metric is one module that decorates its entry point with :func:`register_metric` (or
:func:`register_intervention_metric`) and is imported by ``raystudy/metrics/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from raystudy.registry import Registry

MetricFn = Callable[..., dict[str, float]]

METRICS: Registry[MetricFn] = Registry("metric")
INTERVENTION_METRICS: Registry[MetricFn] = Registry("intervention metric")

#: Function decorator adding a fixed-sample metric to :data:`METRICS` under ``name``.
register_metric = METRICS.register
#: Function decorator adding a metric to :data:`INTERVENTION_METRICS` under ``name``.
register_intervention_metric = INTERVENTION_METRICS.register


def get_metric(name: str) -> MetricFn:
    """The fixed-sample metric registered as ``name``; ValueError naming the known ones."""
    return METRICS.get(name)


def metric_outputs(name: str) -> tuple[str, ...]:
    """The keys the metric registered as ``name`` (of either kind) returns."""
    fn = METRICS.get(name) if name in METRICS else INTERVENTION_METRICS.get(name)
    return tuple(fn.outputs)  # type: ignore[attr-defined]
