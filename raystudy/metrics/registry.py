"""The registries of representation metrics, by name.

:data:`METRICS` holds the fixed-sample metrics. Every entry is called as
``fn(codes_train, factors_train, codes_test, factors_test, seed=..., n_jobs=..., **options)``
with codes (N, D) representation means and factors (N, K) integer indices, and returns
``dict[str, float]`` with short keys (the caller prefixes the entry's ``namespace``, ``dis/`` or
``down/``).

:data:`INTERVENTION_METRICS` holds the metrics that must render observations with chosen
factors fixed. Every entry is called as ``fn(dataset, represent, seed=..., **options)`` with
a :class:`raystudy.data.GroundTruthDataset` and ``represent(images) -> codes``.

Each entry is a :class:`MetricEntry`: the function and what the rest of raystudy needs to know
of it (the keys it returns, its namespace, whether it needs a test sample). A new metric is one
module that decorates its entry point with :func:`register_metric` (or
:func:`register_intervention_metric`) and is imported by ``raystudy/metrics/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from raystudy.registry import Registry

MetricFn = Callable[..., dict[str, float]]


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric: calling it calls `fn`."""

    fn: MetricFn
    #: The keys it returns: what a spec may name (search.metric), checked when it loads.
    outputs: tuple[str, ...]
    #: Where its keys are reported: `dis` (disentanglement) or `down` (downstream accuracy).
    namespace: str = "dis"
    #: Whether it scores a held-out sample (MIG, which fits nothing, does not).
    uses_test_set: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        return self.fn(*args, **kwargs)


METRICS: Registry[MetricEntry] = Registry("metric")
INTERVENTION_METRICS: Registry[MetricEntry] = Registry("intervention metric")


def _register(
    registry: Registry[MetricEntry],
    name: str,
    outputs: Iterable[str],
    namespace: str,
    uses_test_set: bool,
) -> Callable[[MetricFn], MetricFn]:
    def wrap(fn: MetricFn) -> MetricFn:
        registry.register(name)(MetricEntry(fn, tuple(outputs), namespace, uses_test_set))
        return fn  # the function itself stays a plain function, callable as before

    return wrap


def register_metric(
    name: str, *, outputs: Iterable[str], namespace: str = "dis", uses_test_set: bool = True
) -> Callable[[MetricFn], MetricFn]:
    """Function decorator adding a fixed-sample metric to :data:`METRICS` under ``name``."""
    return _register(METRICS, name, outputs, namespace, uses_test_set)


def register_intervention_metric(
    name: str, *, outputs: Iterable[str], namespace: str = "dis"
) -> Callable[[MetricFn], MetricFn]:
    """Function decorator adding a metric to :data:`INTERVENTION_METRICS` under ``name``."""
    return _register(INTERVENTION_METRICS, name, outputs, namespace, uses_test_set=False)


def get_metric(name: str) -> MetricEntry:
    """The fixed-sample metric registered as ``name``; ValueError naming the known ones."""
    return METRICS.get(name)


def metric_entry(name: str) -> MetricEntry:
    """The metric registered as ``name``, of either kind."""
    return METRICS.get(name) if name in METRICS else INTERVENTION_METRICS.get(name)


def metric_outputs(name: str) -> tuple[str, ...]:
    """The keys the metric registered as ``name`` (of either kind) returns."""
    return metric_entry(name).outputs
