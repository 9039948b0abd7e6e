"""SAP, the Separated Attribute Predictability score (Kumar et al. 2018, "Variational
Inference of Disentangled Latent Concepts from Unlabeled Observations", ICLR).

Score every (code dimension j, factor k) pair by how well z_j alone predicts v_k, then
average over factors the gap between the two best dimensions:

    S[j, k] = test accuracy of LinearSVC(C=0.01, class_weight="balanced") fitted on z_j
    SAP     = 1/K sum_k ( S[j*_k, k] - max_{j != j*_k} S[j, k] ),   j*_k = argmax_j S[j, k]

as disentanglement_lib computes it for discrete factors (``evaluation/metrics/sap_score.py``,
10,000 train / 5,000 test points). S is the plain accuracy of the class-balanced SVM, as in
the reference (the issue's "balanced accuracy" is the SVM's class weighting, not the score);
for the uniformly sampled factors of these datasets the two differ by sampling noise only.
Codes are not standardised (nor are they in the reference), so SAP depends on their scale:
with C = 0.01 a code dimension of tiny variance is all but ignored by its SVM.

``continuous_factors=True`` gives the reference's continuous variant instead:
S[j, k] = cov(z_j, v_k)^2 / (var z_j var v_k) on the training points (0 for a constant z_j).

Differences from the reference, for inputs it never meets (each with a
:class:`~raystudy.metrics._checks.MetricWarning`): a factor with a single value on the
training points cannot be fitted and is left out (SAP is 0 if none is left); a code
dimension with NaN or infinite values is treated as dead (all zeros); with one code
dimension the runner-up score is taken as 0.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from raystudy.metrics._checks import Sample, on_arrays
from raystudy.metrics._info import top_two_gap
from raystudy.metrics.registry import register_metric


def sap_score_matrix(
    codes_train: NDArray[np.float64],
    factors_train: NDArray[np.int64],
    codes_test: NDArray[np.float64],
    factors_test: NDArray[np.int64],
    *,
    continuous_factors: bool = False,
    seed: int = 0,
) -> NDArray[np.float64]:
    """S (D, K): predictability of every factor from every single code dimension.

    Args:
        codes_train, factors_train: (N, D) codes and (N, K) factors the SVMs are fitted on;
            every factor must take at least two values here (discrete case).
        codes_test, factors_test: (M, D) and (M, K), where the accuracy is measured.
        continuous_factors: use the squared correlation on the training points instead.
        seed: random state of the SVMs (the primal solver used here is deterministic).

    Returns:
        (D, K) scores in [0, 1].
    """
    num_codes, num_factors = codes_train.shape[1], factors_train.shape[1]
    scores = np.zeros((num_codes, num_factors))
    if continuous_factors:
        z = codes_train - codes_train.mean(axis=0)
        v = factors_train - factors_train.mean(axis=0)
        cov = z.T @ v / max(len(z) - 1, 1)
        var_z = (z**2).sum(axis=0) / max(len(z) - 1, 1)
        var_v = (v**2).sum(axis=0) / max(len(v) - 1, 1)
        denom = np.outer(var_z, var_v)
        # The reference's threshold for a dead code dimension.
        usable = (var_z[:, None] > 1e-12) & (denom > 0)
        np.divide(cov**2, denom, out=scores, where=usable)
        return np.clip(scores, 0.0, 1.0)
    with warnings.catch_warnings():
        # Hitting max_iter on a hopeless (code, factor) pair is expected, as in the reference.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j in range(num_codes):
            x_train, x_test = codes_train[:, j : j + 1], codes_test[:, j : j + 1]
            for k in range(num_factors):
                svm = LinearSVC(C=0.01, class_weight="balanced", random_state=seed)
                svm.fit(x_train, factors_train[:, k])
                scores[j, k] = np.mean(svm.predict(x_test) == factors_test[:, k])
    return scores


@register_metric("sap", outputs=("sap",))
@on_arrays()
def sap(
    sample: Sample, *, seed: int, n_jobs: int, continuous_factors: bool = False
) -> dict[str, float]:
    """SAP score of the codes (see module doc).

    Args:
        codes_train, factors_train: (N, D) codes, (N, K) factor indices (reference N 10000).
        codes_test, factors_test: (M, D), (M, K) (reference M 5000).
        seed: random state of the SVMs.
        n_jobs: unused (each SVM is a single-threaded one-feature fit).
        continuous_factors: the reference's continuous variant (see module doc).

    Returns:
        ``{"sap": value}`` in [0, 1].
    """
    del n_jobs
    varies = sample.varying("sap", on_test=False)
    if not varies.any():
        return {"sap": 0.0}
    scores = sap_score_matrix(
        *sample.factors(varies), continuous_factors=continuous_factors, seed=seed
    )
    return {"sap": float(np.mean(top_two_gap(scores)))}
