"""The public entry points: a metric by name on arrays, or on a dataset and an encoder.

``evaluate("dci", codes, factors)`` splits the rows itself, the first ``num_train`` to
train and the next ``num_test`` to test, so the same arrays always give the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from raystudy.metrics._checks import as_codes, as_factors
from raystudy.metrics._intervention import Represent
from raystudy.metrics.registry import INTERVENTION_METRICS, METRICS

if TYPE_CHECKING:
    from raystudy.data import GroundTruthDataset


def evaluate(
    name: str,
    codes: ArrayLike,
    factors: ArrayLike,
    *,
    seed: int = 0,
    num_train: int = 10_000,
    num_test: int = 5_000,
    **options: Any,
) -> dict[str, float]:
    """Fixed-sample metric ``name`` of ``codes`` against ``factors``.

    Args:
        name: one of :data:`raystudy.metrics.METRICS` (``mig``, ``dci``, ``sap``,
            ``modularity``, ``gbt10000``).
        codes: (N, D) float representation means.
        factors: (N, K) integer factor indices of the same observations.
        seed: random state of whatever the metric trains.
        num_train: rows 0..num_train-1 train (MIG and modularity's MI use these alone).
        num_test: the next num_test rows test; needs N >= num_train + num_test unless the
            metric uses no test set (MIG).
        **options: the metric's own options, e.g. ``backend="sklearn"`` for ``dci``,
            ``n_jobs=2``.

    Returns:
        The metric's scores by short key (see architecture.md section 6 for the ``dis/`` names).
    """
    if name in INTERVENTION_METRICS:
        raise ValueError(
            f"{name!r} renders its own observations: call "
            f"raystudy.metrics.evaluate_intervention({name!r}, dataset, represent)"
        )
    fn = METRICS.get(name)
    z, y = as_codes(codes), as_factors(factors)
    if z.shape[0] != y.shape[0]:
        raise ValueError(f"codes has {z.shape[0]} rows but factors has {y.shape[0]}")
    if num_train < 1 or num_test < 0:
        raise ValueError(f"num_train must be >= 1 and num_test >= 0, got {num_train}, {num_test}")
    needed = num_train + (num_test if fn.uses_test_set else 0)
    if z.shape[0] < needed:
        raise ValueError(
            f"{name} trains on the first num_train={num_train} rows and tests on the next "
            f"num_test={num_test}; got {z.shape[0]} rows (pass smaller num_train/num_test)"
        )
    end = num_train + num_test
    scores = fn(
        z[:num_train], y[:num_train], z[num_train:end], y[num_train:end], seed=seed, **options
    )
    return {key: float(value) for key, value in scores.items()}


def evaluate_intervention(
    name: str,
    dataset: GroundTruthDataset,
    represent: Represent,
    *,
    seed: int = 0,
    **options: Any,
) -> dict[str, float]:
    """Intervention metric ``name`` (``beta_vae``, ``factor_vae``) of ``represent``.

    Args:
        name: one of :data:`raystudy.metrics.INTERVENTION_METRICS`.
        dataset: the ground-truth dataset observations are rendered from.
        represent: images (B, C, H, W) -> codes (B, D), deterministic (posterior means).
        seed: all randomness of the metric.
        **options: the metric's options (``sampler``, ``pool``, ``num_train``, ...).

    Returns:
        The metric's scores by short key.
    """
    fn = INTERVENTION_METRICS.get(name)
    scores = fn(dataset, represent, seed=seed, **options)
    return {key: float(np.asarray(value)) for key, value in scores.items()}
