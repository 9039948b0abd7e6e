"""``mlp``: a multilayer perceptron, two hidden layers of 256 ReLU units.

The parametric probe of Dittadi et al. 2021 ("On the Transfer of Disentangled
Representations in Realistic Settings"). Codes are standardised with the training mean and
standard deviation (a constant code dimension is kept, at 0) so the optimiser sees inputs
of unit scale whatever the encoder's; Adam with early stopping on a 10% validation split
bounds the cost to a few seconds on one core for a few thousand points.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from raystudy.metrics.probes._registry import as_targets, register_probe


@register_probe("mlp")
class MLPProbe:
    """sklearn ``MLPRegressor((256, 256))`` on standardised codes, early stopping."""

    def __init__(
        self,
        seed: int = 0,
        n_jobs: int = 1,
        hidden: tuple[int, ...] = (256, 256),
        max_iter: int = 200,
        learning_rate_init: float = 1e-3,
    ) -> None:
        self.seed = seed
        self.n_jobs = n_jobs
        self.hidden = hidden
        self.max_iter = max_iter
        self.learning_rate_init = learning_rate_init

    def fit(self, X: ArrayLike, Y: ArrayLike) -> MLPProbe:
        targets = as_targets(Y)
        self.num_targets_ = targets.shape[1]
        self.model_: Pipeline = make_pipeline(
            StandardScaler(),
            MLPRegressor(
                hidden_layer_sizes=self.hidden,
                activation="relu",
                learning_rate_init=self.learning_rate_init,
                max_iter=self.max_iter,
                early_stopping=True,
                random_state=self.seed,
            ),
        )
        # BLAS would otherwise take every core, not the trial's share.
        with threadpool_limits(limits=self.n_jobs), warnings.catch_warnings():
            # Hitting max_iter is the intended cost bound, not a failure.
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model_.fit(np.asarray(X, dtype=np.float64), targets)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        with threadpool_limits(limits=self.n_jobs):
            pred = self.model_.predict(np.asarray(X, dtype=np.float64))
        return np.asarray(pred, dtype=np.float64).reshape(-1, self.num_targets_)
