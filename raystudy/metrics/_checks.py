"""Input checks shared by the fixed-sample metrics, and the warning they raise.

The reference implementation (disentanglement_lib) assumes well-behaved inputs: every code
dimension varies, every factor takes several values, there are more samples than histogram
bins, nothing is NaN. A trained VAE does not promise that (a diverged run gives NaN means,
a collapsed one constant dimensions; a small test sample can miss a factor's values). Here
each metric gives a defined number instead of NaN or an exception, and says why with a
:class:`MetricWarning`:

- a code dimension with a NaN or infinite value (in train or test) is replaced by zeros in
  both, i.e. treated as a dead dimension that carries no information;
- a constant code dimension is kept; every metric scores it as carrying no information;
- a factor with one value is dropped by the metrics that cannot score it (each module says
  which), and a metric with nothing left to score returns its no-information value;
- fewer samples than histogram bins only warns: the plug-in mutual information is then
  dominated by its bias.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

T = TypeVar("T")


class MetricWarning(UserWarning):
    """An input made a metric fall back to a documented convention instead of failing."""


def warn(message: str, stacklevel: int = 3) -> None:
    """Emit a :class:`MetricWarning` attributed to the metric's caller (by default)."""
    warnings.warn(message, MetricWarning, stacklevel=stacklevel)


def as_factors(factors: ArrayLike, name: str = "factors") -> NDArray[np.int64]:
    """(N, K) integer factor indices; ValueError for anything else."""
    arr = np.asarray(factors)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be (N, K), got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        raise ValueError(f"{name} must be integer factor indices, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def as_codes(codes: ArrayLike, name: str = "codes") -> NDArray[np.float64]:
    """(N, D) float64 codes; ValueError for anything else."""
    arr = np.asarray(codes, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be (N, D), got shape {arr.shape}")
    return arr


@dataclass(frozen=True)
class Sample:
    """A fixed-sample metric's input after :func:`prepare`: codes (N, D) float64 and factor
    indices (N, K) int64 of the training points, (M, D) and (M, K) of the test points (M = 0
    for a metric without a test set)."""

    codes_train: NDArray[np.float64]
    factors_train: NDArray[np.int64]
    codes_test: NDArray[np.float64]
    factors_test: NDArray[np.int64]

    def varying(self, metric: str | None = None, *, on_test: bool = True) -> NDArray[np.bool_]:
        """(K,) mask of the factors taking more than one value on the training points (and
        the test points with them, ``on_test``); with a ``metric`` name, warns about the rest."""
        sets = (self.factors_train, self.factors_test) if on_test else (self.factors_train,)
        mask = varying_factors(*sets)
        if metric is not None:
            warn_single_valued(mask, metric)
        return mask

    def factors(
        self, keep: NDArray[np.bool_]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """The four arrays, with only the factors ``keep`` marks."""
        return (
            self.codes_train,
            self.factors_train[:, keep],
            self.codes_test,
            self.factors_test[:, keep],
        )


def on_arrays(
    test_set: bool = True,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: ``score(sample, seed=, n_jobs=, **options)`` becomes a function of the arrays
    every fixed-sample metric takes (``raystudy.metrics.registry``), checked by :func:`prepare`
    (the test arrays left out without ``test_set``), under the name and docstring of ``score``.
    """

    def wrap(score: Callable[..., T]) -> Callable[..., T]:
        def metric(
            codes_train: ArrayLike,
            factors_train: ArrayLike,
            codes_test: ArrayLike,
            factors_test: ArrayLike,
            *,
            seed: int = 0,
            n_jobs: int = 1,
            **options: Any,
        ) -> T:
            test = (codes_test, factors_test) if test_set else (None, None)
            sample = prepare(codes_train, factors_train, *test)
            return score(sample, seed=seed, n_jobs=n_jobs, **options)

        functools.update_wrapper(metric, score)
        del metric.__wrapped__  # its signature is the arrays', not the sample's
        return metric

    return wrap


def prepare(
    codes_train: ArrayLike,
    factors_train: ArrayLike,
    codes_test: ArrayLike | None = None,
    factors_test: ArrayLike | None = None,
) -> Sample:
    """Validate shapes, zero non-finite code dimensions, warn about constant ones.

    Args:
        codes_train: (N, D) codes.
        factors_train: (N, K) factor indices.
        codes_test: (M, D) codes, or None for metrics that use one sample.
        factors_test: (M, K) factor indices, or None.

    Returns:
        The four arrays as float64 / int64 in a :class:`Sample` (empty (0, D) and (0, K) test
        arrays for None).
    """
    z_train, y_train = as_codes(codes_train, "codes_train"), as_factors(factors_train)
    if codes_test is None or factors_test is None:
        z_test = np.zeros((0, z_train.shape[1]))
        y_test = np.zeros((0, y_train.shape[1]), dtype=np.int64)
    else:
        z_test, y_test = as_codes(codes_test, "codes_test"), as_factors(factors_test)
    if z_train.shape[0] != y_train.shape[0] or z_test.shape[0] != y_test.shape[0]:
        raise ValueError(
            f"codes and factors must have the same number of rows, got train "
            f"{z_train.shape}/{y_train.shape} and test {z_test.shape}/{y_test.shape}"
        )
    if z_train.shape[1] != z_test.shape[1] or y_train.shape[1] != y_test.shape[1]:
        raise ValueError(
            f"train and test disagree on D or K: {z_train.shape}/{y_train.shape} "
            f"vs {z_test.shape}/{y_test.shape}"
        )
    if z_train.shape[0] == 0:
        raise ValueError("a metric needs at least one training point")
    bad = ~np.isfinite(z_train).all(axis=0) | ~np.isfinite(z_test).all(axis=0)
    if bad.any():
        warn(
            f"code dimension(s) {np.flatnonzero(bad).tolist()} contain NaN or inf; "
            "treated as dead (set to 0)"
        )
        z_train, z_test = z_train.copy(), z_test.copy()
        z_train[:, bad] = 0.0
        z_test[:, bad] = 0.0
    constant = ~bad & (np.ptp(z_train, axis=0) == 0)
    if constant.any():
        warn(
            f"code dimension(s) {np.flatnonzero(constant).tolist()} are constant on the "
            "training points; scored as carrying no information"
        )
    return Sample(z_train, y_train, z_test, y_test)


def varying_factors(*factor_sets: NDArray[np.int64]) -> NDArray[np.bool_]:
    """(K,) mask of factors taking more than one value across the given sets together."""
    nonempty = [f for f in factor_sets if f.size]
    if not nonempty:
        return np.zeros(factor_sets[0].shape[1], dtype=bool)
    both = np.concatenate(nonempty, axis=0)
    return both.max(axis=0) > both.min(axis=0)


def warn_single_valued(mask: NDArray[np.bool_], metric: str) -> None:
    """Warn, naming them, about the factors ``mask`` marks as taking a single value."""
    if (~mask).any():
        factors = np.flatnonzero(~mask).tolist()
        warn(f"{metric}: factor(s) {factors} take a single value; left out", stacklevel=4)
