"""Modularity and explicitness (Ridgeway & Mozer 2018, "Learning Deep Disentangled
Embeddings with the F-Statistic Loss", NeurIPS).

Modularity asks whether each code dimension depends on at most one factor. With m[j, k]
the mutual information between the 20-bin histogram of z_j and factor v_k (as for MIG, on
the training points) and theta_j = max_k m[j, k]:

    delta_j      = sum_{k != argmax} m[j, k]^2 / (theta_j^2 (K - 1))
    modularity   = 1/D sum_j (1 - delta_j)          (a dimension with theta_j = 0 scores 0)

Explicitness asks whether each factor can be read out linearly. Codes are standardised
with the training mean and standard deviation; per factor a ``LogisticRegression()``
(sklearn defaults) is fitted on the training points, and its class probabilities on the
test points are scored by the ROC AUC of each class against the rest, macro-averaged; the
score is the mean over factors.

This is disentanglement_lib's ``evaluation/metrics/modularity_explicitness.py`` (10,000
train / 5,000 test points), which reports the test AUC as "explicitness_score_test".

Differences from the reference, for inputs it never meets (each with a
:class:`~raystudy.metrics._checks.MetricWarning`):
- the reference divides by the standard deviation of every code dimension, so a constant
  dimension gives NaN features and the fit raises. Here constant (and NaN/inf, which are
  zeroed first) dimensions are left out of the logistic regression: they carry nothing a
  linear readout could use. With no dimension left, the readout is the constant prior and
  every AUC is 0.5 (chance);
- a factor with a single value on the training points cannot be fitted and is left out of
  explicitness; a factor with a single value across train and test is also left out of
  modularity (its MI column is zero, which would only shrink every delta_j by counting it
  in K - 1). With one factor left, delta_j = 0 (a dimension depending on anything depends
  on that factor only). Nothing left: modularity 0, explicitness 0.5;
- a class never seen in training, or one with only positives or only negatives among the
  test points, has no defined AUC; the macro average is over the classes that have one
  (the reference raises in both cases);
- fewer samples than bins only warns.
- sklearn changed ``LogisticRegression``'s defaults in 0.22 (liblinear one-vs-rest ->
  lbfgs multinomial); published numbers mostly predate that and so differ slightly.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from raystudy.metrics._checks import Sample, on_arrays, warn
from raystudy.metrics._info import discretize, mutual_info_matrix
from raystudy.metrics.registry import register_metric


def modularity_score(mutual_info: ArrayLike) -> float:
    """Mean over code dimensions of 1 - delta_j, from the (D, K) mutual-information matrix.

    Args:
        mutual_info: (D, K) m[j, k] >= 0.

    Returns:
        Modularity in [0, 1]; dimensions with theta_j = 0 score 0.
    """
    mi = np.asarray(mutual_info, dtype=np.float64)
    squared = mi**2
    theta2 = squared.max(axis=1)
    others = squared.sum(axis=1) - theta2
    num_factors = mi.shape[1]
    delta = np.zeros(mi.shape[0])
    if num_factors > 1:
        np.divide(others, theta2 * (num_factors - 1), out=delta, where=theta2 > 0)
    per_code = np.where(theta2 > 0, 1.0 - delta, 0.0)
    return float(np.clip(per_code.mean(), 0.0, 1.0))


def explicitness_per_factor(
    codes_train: NDArray[np.float64],
    factors_train: NDArray[np.int64],
    codes_test: NDArray[np.float64],
    factors_test: NDArray[np.int64],
    *,
    seed: int = 0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Macro one-vs-rest ROC AUC of a logistic readout of every factor (train, test).

    Args:
        codes_train, factors_train: (N, D) codes, (N, K) factors; each factor must take at
            least two values on these points.
        codes_test, factors_test: (M, D), (M, K).
        seed: random state of the logistic regressions (lbfgs does not use it).

    Returns:
        Two (K,) arrays of AUCs in [0, 1]: on the training and on the test points.
    """
    mean, std = codes_train.mean(axis=0), codes_train.std(axis=0)
    usable = std > 0
    x_train = (codes_train[:, usable] - mean[usable]) / std[usable]
    x_test = (codes_test[:, usable] - mean[usable]) / std[usable]
    num_factors = factors_train.shape[1]
    auc_train, auc_test = np.full(num_factors, 0.5), np.full(num_factors, 0.5)
    if not usable.any():
        return auc_train, auc_test
    for k in range(num_factors):
        with warnings.catch_warnings():
            # The reference's default max_iter does not always converge; keep its numbers.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(random_state=seed).fit(x_train, factors_train[:, k])
        auc_train[k] = _macro_auc(factors_train[:, k], model.predict_proba(x_train), model)
        auc_test[k] = _macro_auc(factors_test[:, k], model.predict_proba(x_test), model)
    return auc_train, auc_test


@register_metric("modularity", outputs=("modularity", "explicitness"))
@on_arrays()
def modularity(sample: Sample, *, seed: int, n_jobs: int, num_bins: int = 20) -> dict[str, float]:
    """Modularity (training points) and explicitness (test AUC) of the codes.

    Returns:
        ``{"modularity", "explicitness"}``, both in [0, 1].
    """
    z_train = sample.codes_train
    if z_train.shape[0] < num_bins:
        warn(f"modularity: {z_train.shape[0]} samples for {num_bins} bins; MI is mostly bias")
    varies = sample.varying()
    fitted = sample.varying("modularity", on_test=False)
    out = {"modularity": 0.0, "explicitness": 0.5}
    if varies.any():
        mi = mutual_info_matrix(discretize(z_train, num_bins), sample.factors_train[:, varies])
        out["modularity"] = modularity_score(mi)
    if fitted.any():
        # BLAS would otherwise take every core, not the trial's share.
        with threadpool_limits(limits=n_jobs):
            _, auc_test = explicitness_per_factor(*sample.factors(fitted), seed=seed)
        out["explicitness"] = float(np.mean(auc_test))
    return out


def _macro_auc(
    labels: NDArray[np.int64], proba: NDArray[np.float64], model: LogisticRegression
) -> float:
    """Macro ROC AUC of each training class against the rest, over classes that have one."""
    onehot = labels[:, None] == model.classes_[None, :]
    positives = onehot.sum(axis=0)
    scorable = (positives > 0) & (positives < len(labels))
    if not scorable.any():
        return 0.5
    aucs = [roc_auc_score(onehot[:, c], proba[:, c]) for c in np.flatnonzero(scorable)]
    return float(np.mean(aucs))
