"""Bootstrap resampling of trials: Spearman's rho over many resamples at once, as weighted
ranks (`weighted_spearman`, `bootstrap_spearman`), a difference of two groups' means
(`bootstrap_difference`), and the chunks any bootstrap draws its resamples in (`in_chunks`),
which bound its memory while drawing from the generator in the order of one pass."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

#: The coverage of a percentile-bootstrap interval.
LEVEL = 0.95
#: Bootstrap replicates resampled at once; bounds memory at ~ chunk x trials x columns floats.
_MAX_CHUNK_FLOATS = 4_000_000
#: Bootstrap replicates x trials drawn at once: bounds memory at ~16 MB of indices.
_MAX_DRAWS = 2_000_000


def in_chunks(
    n_boot: int, chunk: int, draw: Callable[[int], NDArray[np.float64]]
) -> NDArray[np.float64]:
    """`n_boot` resamples, `draw(size)` giving `size` of them along the first axis, drawn
    `chunk` at a time and concatenated."""
    return np.concatenate([draw(min(chunk, n_boot - start)) for start in range(0, n_boot, chunk)])


def bootstrap_weights(n: int, n_boot: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """(n_boot, n) counts: how often each trial is drawn in each bootstrap resample."""
    draws = rng.integers(0, n, size=(n_boot, n))
    offsets = np.arange(n_boot)[:, None] * n
    counts = np.bincount((draws + offsets).ravel(), minlength=n_boot * n)
    return counts.reshape(n_boot, n).astype(np.float64)


def _weighted_ranks(
    weights: NDArray[np.float64], codes: NDArray[np.intp], n_classes: int
) -> NDArray[np.float64]:
    """Average ranks (ties share their mean rank, as `scipy.stats.rankdata`) of one column in
    each weighted resample, without sorting: the order of a resample is the order of the
    original distinct values, so counting draws per value class gives every rank.

    A value class k drawn c_k times occupies positions S_{k-1}+1 .. S_k (S the cumulative
    counts), so its average rank is S_k - (c_k - 1) / 2.
    """
    n_boot = weights.shape[0]
    flat = (np.arange(n_boot)[:, None] * n_classes + codes[None, :]).ravel()
    counts = np.bincount(flat, weights=weights.ravel(), minlength=n_boot * n_classes)
    counts = counts.reshape(n_boot, n_classes)
    ends = np.cumsum(counts, axis=1)
    return (ends - (counts - 1.0) / 2.0)[:, codes]


def _standardised(
    weights: NDArray[np.float64], columns: NDArray[np.float64]
) -> NDArray[np.float64]:
    """(B, n, c): each column's resample ranks, centred and scaled to unit weighted variance
    (NaN where a resample holds a single distinct value: rho is undefined there)."""
    total = weights.sum(axis=1, keepdims=True)
    out = np.empty((*weights.shape, columns.shape[1]))
    for j in range(columns.shape[1]):
        values, codes = np.unique(columns[:, j], return_inverse=True)
        ranks = _weighted_ranks(weights, codes.ravel(), values.size)
        # Ranks of n items always average (n + 1) / 2.
        centred = ranks - (total + 1.0) / 2.0
        var = (weights * centred**2).sum(axis=1, keepdims=True) / total
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, :, j] = np.where(var > 1e-12, centred / np.sqrt(var), np.nan)
    return out


def weighted_spearman(
    weights: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64]
) -> NDArray[np.float64]:
    """(B, p, q) Spearman's rho between every column of x (n, p) and of y (n, q), in each of
    the B weighted resamples `weights` (B, n). Ones as weights give the sample's own rho."""
    zx, zy = _standardised(weights, x), _standardised(weights, y)
    total = weights.sum(axis=1)[:, None, None]
    return np.matmul(np.swapaxes(zx * weights[:, :, None], 1, 2), zy) / total


def bootstrap_spearman(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    n_boot: int,
    rng: np.random.Generator,
    level: float = LEVEL,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """rho (p, q) of the sample and its percentile-bootstrap interval (low, high), resampling
    rows (trials) jointly for all pairs. Complete data only (no NaN).

    An interval is NaN when under half the resamples define rho (a score almost constant).
    """
    n = x.shape[0]
    rho = weighted_spearman(np.ones((1, n)), x, y)[0]
    if n_boot < 1:
        return rho, np.full_like(rho, np.nan), np.full_like(rho, np.nan)
    chunk = max(1, _MAX_CHUNK_FLOATS // max(1, n * (x.shape[1] + y.shape[1])))
    boot = in_chunks(
        n_boot, chunk, lambda size: weighted_spearman(bootstrap_weights(n, size, rng), x, y)
    )
    valid = np.isfinite(boot).sum(axis=0)
    tail = (1.0 - level) / 2.0 * 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells are masked below
        low, high = np.nanpercentile(boot, [tail, 100.0 - tail], axis=0)
    enough = (valid * 2 >= n_boot) & np.isfinite(rho)
    return rho, np.where(enough, low, np.nan), np.where(enough, high, np.nan)


def bootstrap_difference(
    a: NDArray[np.float64], b: NDArray[np.float64], *, n_boot: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its percentile-bootstrap interval, each sample resampled on its
    own (the groups' sizes are fixed by the study's design); NaN bounds when n_boot < 1."""
    diff = float(a.mean() - b.mean())
    if n_boot < 1:
        return diff, math.nan, math.nan

    def draw(size: int) -> NDArray[np.float64]:
        means_a = a[rng.integers(0, a.size, (size, a.size))].mean(axis=1)
        means_b = b[rng.integers(0, b.size, (size, b.size))].mean(axis=1)
        return means_a - means_b

    reps = in_chunks(n_boot, max(1, _MAX_DRAWS // (a.size + b.size)), draw)
    tail = (1.0 - LEVEL) / 2.0 * 100.0
    low, high = np.percentile(reps, [tail, 100.0 - tail])
    return diff, float(low), float(high)
