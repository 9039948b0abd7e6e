"""Discrete mutual-information helpers shared by the information-based metrics.

MIG (Chen et al. 2018) and Modularity (Ridgeway & Mozer 2018) both estimate the mutual
information between each code dimension and each ground-truth factor with the plug-in
estimator on a histogram of the code, as disentanglement_lib does:

    m[j, k] = I(bin(z_j); v_k) = sum_{a,b} p(a, b) log(p(a, b) / (p(a) p(b)))   (nats)

where ``bin(z_j)`` puts z_j into ``num_bins`` equal-width bins spanning its sample range.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.metrics import mutual_info_score


def discretize(codes: ArrayLike, num_bins: int = 20) -> NDArray[np.int64]:
    """Bin every code dimension into ``num_bins`` equal-width bins over its own min..max.

    Follows disentanglement_lib: ``np.digitize`` against the ``np.histogram`` edges of the
    dimension with the last edge dropped, so bins are numbered 1..num_bins and the maximum
    falls in the last bin rather than in a bin of its own. A constant dimension lands in a
    single bin (and so carries no information).

    Args:
        codes: (N, D) float array of representation means.
        num_bins: number of equal-width bins per dimension.

    Returns:
        (N, D) int array of bin indices in 1..num_bins.
    """
    codes = np.asarray(codes, dtype=np.float64)
    if codes.ndim != 2:
        raise ValueError(f"codes must be (N, D), got shape {codes.shape}")
    if num_bins < 1:
        raise ValueError(f"num_bins must be >= 1, got {num_bins}")
    binned = np.empty(codes.shape, dtype=np.int64)
    for j in range(codes.shape[1]):
        edges = np.histogram(codes[:, j], bins=num_bins)[1]
        binned[:, j] = np.digitize(codes[:, j], edges[:-1])
    return binned


def mutual_info_matrix(codes_discrete: ArrayLike, factors: ArrayLike) -> NDArray[np.float64]:
    """Plug-in mutual information (nats) between every discrete code and every factor.

    Args:
        codes_discrete: (N, D) int array, e.g. from :func:`discretize`.
        factors: (N, K) int array of factor indices.

    Returns:
        (D, K) array m with m[j, k] = I(code_j; factor_k).
    """
    codes_discrete = np.asarray(codes_discrete)
    factors = np.asarray(factors)
    _check_paired(codes_discrete, factors)
    num_codes, num_factors = codes_discrete.shape[1], factors.shape[1]
    mi = np.zeros((num_codes, num_factors), dtype=np.float64)
    for j in range(num_codes):
        for k in range(num_factors):
            mi[j, k] = mutual_info_score(codes_discrete[:, j], factors[:, k])
    return mi


def factor_entropy(factors: ArrayLike) -> NDArray[np.float64]:
    """Plug-in entropy H(v_k) = I(v_k; v_k) in nats of every factor, shape (K,)."""
    factors = np.asarray(factors)
    if factors.ndim != 2:
        raise ValueError(f"factors must be (N, K), got shape {factors.shape}")
    return np.array(
        [mutual_info_score(factors[:, k], factors[:, k]) for k in range(factors.shape[1])],
        dtype=np.float64,
    )


def _check_paired(codes: NDArray, factors: NDArray) -> None:
    if codes.ndim != 2 or factors.ndim != 2:
        raise ValueError(
            f"codes and factors must be 2-D, got shapes {codes.shape} and {factors.shape}"
        )
    if codes.shape[0] != factors.shape[0]:
        raise ValueError(
            f"codes and factors must have the same number of rows, "
            f"got {codes.shape[0]} and {factors.shape[0]}"
        )


def top_two_gap(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per column of ``scores``: the largest entry minus the second largest (0 if one row);
    the gap MIG (on m[j, k]) and SAP (on S[j, k]) average over the factors."""
    # Sorting each column descending puts the best and runner-up code in rows 0 and 1.
    ranked = -np.sort(-scores, axis=0)
    runner_up = ranked[1] if ranked.shape[0] > 1 else np.zeros(scores.shape[1])
    return ranked[0] - runner_up
