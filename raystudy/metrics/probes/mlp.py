"""``mlp``: multilayer perceptrons, two hidden layers of 256 ReLU units, one per factor;
``mlp_sklearn``: the same, always computed by scikit-learn (the reference).

The parametric probe of Dittadi et al. 2021 ("On the Transfer of Disentangled
Representations in Realistic Settings", Sec. 4: "We independently train one predictor per
factor"): sklearn ``MLPRegressor((256, 256))`` per factor, Adam with early stopping on a 10%
validation split, which bounds the cost to a few seconds on one core for a few thousand
points.

``mlp`` names the probe; :func:`mlp_implementation` says what computes it where it is
scored: the batched torch twin ``mlp_torch`` (:mod:`raystudy.metrics.probes.mlp_torch`: the
same networks, draws, minibatches, Adam and stopping rule, in float32) on a GPU and on a CPU
alike. It was shown statistically equivalent to scikit-learn's on the laptop study's 24
encoders, and is 1.7-1.8x faster on one CPU thread (docs/performance/scoring.md); scikit-learn
itself stays available as ``mlp_sklearn``, the reference. A run's tag ``raystudy.probe.mlp``
says which computed its scores.

The codes are not standardised. A probe's training set can hold a factor at one value (OOD1-A
fits on a single hue), and then a disentangled code's dimension for that factor is constant up
to noise there: dividing by that training spread turns the unseen values into inputs tens of
standard deviations out, and breaks every prediction of a disentangled code while an entangled
one, whose dimensions all vary, is spared. That would reverse the very correlation the probe
measures (tests/test_metrics_transfer.py has the case).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor
from threadpoolctl import threadpool_limits

from raystudy.metrics.probes._registry import PROBES, as_targets, get_probe, register_probe

#: What computes ``mlp`` on a CPU and on a GPU: the twin on both, which the measurements of
#: docs/performance/scoring.md allow (equivalent, and faster on a CPU too); one algorithm
#: everywhere, so a study whose trials ran on CPUs and GPUs alike mixes nothing.
CPU_MLP = "mlp_torch"
GPU_MLP = "mlp_torch"


def mlp_implementation(device: str) -> str:
    """The probe that computes ``mlp`` on ``device`` ("cpu", "cuda", "cuda:1")."""
    return CPU_MLP if device == "cpu" else GPU_MLP


@register_probe("mlp_sklearn")
@dataclass(eq=False)
class SklearnMLPProbe:
    """The MLP probe as scikit-learn computes it, ``MLPRegressor((256, 256))`` per factor."""

    seed: int = 0
    n_jobs: int = 1
    hidden: tuple[int, ...] = (256, 256)
    max_iter: int = 200
    learning_rate_init: float = 1e-3

    @staticmethod
    def implementation(device: str = "cpu") -> str:
        """How this probe computes, for a run's tags (always on the CPU)."""
        return "sklearn MLPRegressor float64 on cpu"

    def fit(self, X: ArrayLike, Y: ArrayLike) -> SklearnMLPProbe:
        targets = as_targets(Y)
        codes = np.asarray(X, dtype=np.float64)
        self.models_: list[MLPRegressor] = []
        # BLAS would otherwise take every core, not the trial's share.
        with threadpool_limits(limits=self.n_jobs), warnings.catch_warnings():
            # Hitting max_iter is the intended cost bound, not a failure.
            warnings.simplefilter("ignore", ConvergenceWarning)
            for k in range(targets.shape[1]):
                model = MLPRegressor(
                    hidden_layer_sizes=self.hidden,
                    activation="relu",
                    learning_rate_init=self.learning_rate_init,
                    max_iter=self.max_iter,
                    early_stopping=True,
                    random_state=self.seed,
                )
                self.models_.append(model.fit(codes, targets[:, k]))
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        codes = np.asarray(X, dtype=np.float64)
        with threadpool_limits(limits=self.n_jobs):
            columns = [m.predict(codes) for m in self.models_]
        return np.stack(columns, axis=1).astype(np.float64)


@register_probe("mlp")
class MLPProbe:
    """Dittadi et al.'s MLP probe, computed by scikit-learn's batched twin (mlp_torch)."""

    def __init__(self, seed: int = 0, n_jobs: int = 1, device: str = "cpu") -> None:
        self.seed, self.n_jobs, self.device = seed, n_jobs, device
        self.probe_: Any = None

    @staticmethod
    def implementation(device: str = "cpu") -> str:
        """How this probe computes on ``device``, for a run's tags."""
        return PROBES.get(mlp_implementation(device)).implementation(device)

    def fit(self, X: ArrayLike, Y: ArrayLike) -> MLPProbe:
        name = mlp_implementation(self.device)
        self.probe_ = get_probe(name, seed=self.seed, n_jobs=self.n_jobs, device=self.device)
        self.probe_.fit(X, Y)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        return self.probe_.predict(X)
