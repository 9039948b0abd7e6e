"""``own``: no readout fitted; a representation with one dimension per factor is itself the
prediction, prediction_k(z) = z_k.

Schott et al. 2022 ("Visual Representation Learning Does Not Generalize Strongly Within the
Same Domain") score their supervised models on the network's own outputs. raystudy's
reference objectives (``supervised``, ``gt_decoder``) have such a code: the normalised factors,
column k for factor k. :func:`raystudy.metrics.transfer.transfer` hands this probe the code's
columns of the factors it regresses (``reads_factor_code``); for any other model the readout is
undefined, and a trial does not report it (:func:`probe_applies`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from raystudy.metrics.probes._registry import as_targets, register_probe


@register_probe("own")
class OwnOutputs:
    """The identity readout: fits nothing, predicts the code."""

    reads_factor_code: ClassVar[bool] = True

    def __init__(self, seed: int = 0, n_jobs: int = 1) -> None:
        self.seed = seed
        self.n_jobs = n_jobs

    @staticmethod
    def implementation() -> str:
        """How this probe computes, for a run's tags: nothing is fitted."""
        return "the code itself"

    def fit(self, X: ArrayLike, Y: ArrayLike) -> OwnOutputs:
        codes, targets = np.asarray(X), as_targets(Y)
        if codes.ndim != 2 or codes.shape[1] != targets.shape[1]:
            raise ValueError(
                f"the 'own' readout needs one code dimension per factor: the code has shape "
                f"{codes.shape}, the targets {targets.shape}"
            )
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        return np.asarray(X, dtype=np.float64)
