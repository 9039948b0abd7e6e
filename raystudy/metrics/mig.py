"""Mutual Information Gap (Chen et al. 2018, "Isolating Sources of Disentanglement in VAEs").

For every factor v_k, the gap between the two code dimensions that know most about it,
normalised by the factor's entropy:

    MIG = 1/K sum_k ( m[j*_k, k] - max_{j != j*_k} m[j, k] ) / H(v_k),   j*_k = argmax_j m[j, k]

with m the plug-in mutual information between the 20-bin histogram of each code dimension
and each factor (see :mod:`raystudy.metrics._info`), as disentanglement_lib
(Locatello et al. 2019, ``evaluation/metrics/mig.py``) computes it on the 10,000 training
points.

Differences from the reference, all for inputs it never meets (each with a
:class:`~raystudy.metrics._checks.MetricWarning`):
- a factor with a single value in the sample has H = 0 and no defined gap; it is left out
  of the mean instead of dividing by zero, and MIG is 0 if no factor varies;
- a code dimension with NaN or infinite values is treated as dead (all zeros), where the
  reference's histogram raises;
- with a single code dimension the "second largest" is taken as 0;
- fewer samples than bins only warns (the estimate is then mostly bias).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from raystudy.metrics._checks import Sample, on_arrays, prepare, warn
from raystudy.metrics._info import discretize, factor_entropy, mutual_info_matrix, top_two_gap
from raystudy.metrics.registry import register_metric


def mig_per_factor(codes: ArrayLike, factors: ArrayLike, num_bins: int = 20) -> NDArray[np.float64]:
    """Normalised mutual-information gap of every factor, shape (K,).

    Args:
        codes: (N, D) float array of representation means (finite).
        factors: (N, K) int array of factor indices.
        num_bins: equal-width histogram bins per code dimension.

    Returns:
        (K,) array of gaps in [0, 1]; NaN for factors with a single value in the sample.
    """
    mi = mutual_info_matrix(discretize(codes, num_bins), factors)
    entropy = factor_entropy(factors)
    gap = top_two_gap(mi)
    out = np.full(mi.shape[1], np.nan)
    informative = entropy > 0
    # Plug-in MI of one variable with another never exceeds either's entropy; the clip
    # only removes float rounding (1 + 1e-16) so the score stays in [0, 1].
    out[informative] = np.clip(gap[informative] / entropy[informative], 0.0, 1.0)
    return out


def mig(codes: ArrayLike, factors: ArrayLike, num_bins: int = 20) -> dict[str, float]:
    """Mutual Information Gap, averaged over the factors that vary in the sample.

    Args:
        codes: (N, D) float array of representation means (the reference uses N = 10000).
        factors: (N, K) int array of factor indices.
        num_bins: equal-width histogram bins per code dimension (reference: 20).

    Returns:
        ``{"mig": value}`` in [0, 1]; 0 if no factor varies.
    """
    return _mig(prepare(codes, factors), num_bins)


# MIG fits nothing: it needs no held-out sample.
@register_metric("mig", outputs=("mig",), uses_test_set=False)
@on_arrays(test_set=False)
def mig_metric(sample: Sample, *, seed: int, n_jobs: int, num_bins: int = 20) -> dict[str, float]:
    """Registry entry: MIG of the training sample alone, as the reference scores it.

    MIG fits nothing, so it needs no held-out sample and no seed or threads.
    """
    del seed, n_jobs
    return _mig(sample, num_bins)


def _mig(sample: Sample, num_bins: int) -> dict[str, float]:
    z, y = sample.codes_train, sample.factors_train
    if z.shape[0] < num_bins:
        warn(f"mig: {z.shape[0]} samples for {num_bins} bins; the estimate is mostly bias")
    varies = sample.varying("mig")
    if not varies.any():
        return {"mig": 0.0}
    return {"mig": float(np.mean(mig_per_factor(z, y[:, varies], num_bins)))}
