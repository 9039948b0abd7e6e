"""Downstream classification accuracy (Locatello et al. 2019, "Challenging Common
Assumptions in the Unsupervised Learning of Disentangled Representations", section 6).

How well do the codes serve a simple downstream learner given few labels? Per factor a
gradient-boosted classifier (sklearn ``GradientBoostingClassifier()`` defaults, as in
disentanglement_lib's ``evaluation/metrics/downstream_task.py``) is trained on the first n
training points and scored on the test points:

    gbt{n}_acc = 1/K sum_k accuracy of the classifier for v_k on the test points,
    n in (10, 100, 1000, 10000); "GBT10000" (``down/gbt10000_acc``) is the headline.

The classifiers are those of DCI (:mod:`raystudy.metrics.dci`), same backends and options:
on the same arrays gbt10000_acc equals dci_i, and the fit is shared (computed once).

Differences from the reference: it draws a fresh train and test sample for every n; here
all n use the first n rows of the one training set and the one test set, so the scores for
different n are comparable point for point. A training size larger than the training set
is reported as NaN with a :class:`~raystudy.metrics._checks.MetricWarning` (the key stays,
so tables keep their columns). Factors with a single value across train and test are left
out (their accuracy would be a trivial 1), as in DCI; with none left every score is 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raystudy.metrics._checks import Sample, on_arrays, warn
from raystudy.metrics.dci import MAX_BINS, Backend, Boosting, fit_factor_classifiers
from raystudy.metrics.registry import register_metric

TRAIN_SIZES: tuple[int, ...] = (10, 100, 1000, 10000)


@register_metric("gbt10000", outputs=tuple(f"gbt{n}_acc" for n in TRAIN_SIZES), namespace="down")
@on_arrays()
def downstream_gbt(
    sample: Sample,
    *,
    seed: int,
    n_jobs: int,
    train_sizes: Sequence[int] = TRAIN_SIZES,
    backend: Backend = "exact",
    max_bins: int | None = MAX_BINS,
    device: str = "cpu",
) -> dict[str, float]:
    """Mean test accuracy of per-factor GBT classifiers trained on n points, for each n.

    Args:
        codes_train, factors_train: (N, D) codes, (N, K) factor indices.
        codes_test, factors_test: (M, D), (M, K).
        seed, n_jobs, backend, max_bins, device: as for :func:`raystudy.metrics.dci.dci`.
        train_sizes: the n to train on (the first n training rows each).

    Returns:
        ``{"gbt{n}_acc": accuracy}`` for every n, in [0, 1] (NaN where n > N).
    """
    varies = sample.varying("gbt10000")
    z_train, y_train, z_test, y_test = sample.factors(varies)
    boosting = Boosting(backend, seed, n_jobs, max_bins, device)
    out: dict[str, float] = {}
    for n in train_sizes:
        key = f"gbt{n}_acc"
        if n > len(z_train):
            warn(f"gbt10000: {key} needs {n} training points, got {len(z_train)}; NaN")
            out[key] = float("nan")
            continue
        if not varies.any():
            out[key] = 1.0
            continue
        fits = fit_factor_classifiers(z_train[:n], y_train[:n], z_test, y_test, boosting)
        out[key] = float(np.mean(fits.test_acc))
    return out
