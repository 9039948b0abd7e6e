"""``linear``: ordinary least squares from the codes to every factor at once.

The linear readout of Schott et al. 2022 ("Visual Representation Learning Does Not
Generalize Strongly Within the Same Domain") and of the explicitness of a representation:
it succeeds only where a factor is written linearly in the codes, and it extrapolates
(linearly) beyond the training range, unlike the tree probe. sklearn's ``LinearRegression``
(least squares by ``scipy.linalg.lstsq``, minimum-norm for collinear or dead dimensions),
which is deterministic: the seed is accepted for the probe interface and not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.linear_model import LinearRegression
from threadpoolctl import threadpool_limits

from raystudy.metrics.probes._registry import as_targets, register_probe


@register_probe("linear")
@dataclass(eq=False)
class LinearProbe:
    """Least-squares linear regression with an intercept, one output per factor."""

    seed: int = 0
    n_jobs: int = 1

    @staticmethod
    def implementation() -> str:
        """How this probe computes, for a run's tags (always on the CPU)."""
        return "sklearn LinearRegression float64 on cpu"

    def fit(self, X: ArrayLike, Y: ArrayLike) -> LinearProbe:
        targets = as_targets(Y)
        self.num_targets_ = targets.shape[1]
        # BLAS would otherwise take every core, not the trial's share.
        with threadpool_limits(limits=self.n_jobs):
            self.model_ = LinearRegression().fit(np.asarray(X, dtype=np.float64), targets)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        with threadpool_limits(limits=self.n_jobs):
            pred = self.model_.predict(np.asarray(X, dtype=np.float64))
        return np.asarray(pred, dtype=np.float64).reshape(-1, self.num_targets_)
