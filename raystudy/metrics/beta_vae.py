"""The BetaVAE disentanglement score (Higgins et al. 2017, "beta-VAE: Learning Basic Visual
Concepts with a Constrained Variational Framework", ICLR).

A point of the score's data set: pick a factor k uniformly; draw ``batch_size`` (64) pairs
of observations (x1, x2) that share factor k's value and are otherwise random; its feature
is the mean over the pairs of |z(x1) - z(x2)| (D values) and its label is k. A linear
classifier (sklearn ``LogisticRegression()`` defaults) is trained on ``num_train`` (10,000)
such points and the score is its accuracy on ``num_eval`` (5,000) others: a representation
in which each factor moves its own dimensions makes the fixed factor's dimensions the
smallest, which a linear model reads off.

This is disentanglement_lib's ``evaluation/metrics/beta_vae.py`` (``beta_vae_sklearn``),
with the observation pool of :mod:`raystudy.metrics._intervention` (``pool=None`` for
fresh draws, the reference's way). Other differences:
- only factors that vary among the drawn combinations are fixed (a factor of size 1, or one
  a split holds constant, is indistinguishable from "nothing fixed"; the reference's
  datasets list only varying factors as latent);
- ``beta_vae_resampled`` reports the share of sampled combinations rejected as infeasible
  (or outside the sampler's set) and redrawn; 0.0 on a dataset without infeasible states;
- sklearn changed ``LogisticRegression``'s defaults in 0.22 (liblinear one-vs-rest -> lbfgs
  multinomial), which moves the score slightly against numbers published before that.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from raystudy.metrics._checks import warn
from raystudy.metrics._intervention import (
    CodePool,
    Intervention,
    draws_with_values,
    on_dataset,
    partners,
    rejected_since,
    sampler_counts,
    varying,
)
from raystudy.metrics.registry import register_intervention_metric


@register_intervention_metric(
    "beta_vae", outputs=("beta_vae", "beta_vae_train", "beta_vae_resampled")
)
@on_dataset
def beta_vae(setting: Intervention, *, n_jobs: int) -> dict[str, float]:
    """BetaVAE score of ``represent`` on ``dataset`` (see module doc).

    Args:
        setting: the dataset, ``represent``, seed, sampler, pool, render batch size and
            device, as :func:`~raystudy.metrics._intervention.on_dataset` builds them
            (``batch_size`` pairs per point, ``num_train`` points the classifier is trained
            on, ``num_eval`` it is scored on).
        n_jobs: BLAS threads for the classifier.

    Returns:
        ``{"beta_vae": eval accuracy, "beta_vae_train": train accuracy,
        "beta_vae_resampled": share of draws rejected as infeasible}``.
    """
    rng = np.random.default_rng([setting.seed, 1])
    sampler, batch_size, num_points = setting.sampler, setting.batch_size, setting.num_points
    if setting.pool is None:
        before = sampler_counts(sampler)
        first = np.asarray(sampler(num_points * batch_size, rng), dtype=np.int64)
        factors = varying(first)
        fixed = _fixed_factors(factors, num_points, rng)
        per_pair = np.repeat(fixed, batch_size)
        second = np.empty_like(first)
        for k in factors:
            rows = per_pair == k
            second[rows] = draws_with_values(sampler, int(k), first[rows, k], rng)
        codes = setting.codes(np.concatenate([first, second]))
        n = len(first)
        diffs = np.abs(codes[:n] - codes[n:]).reshape(num_points, batch_size, -1)
        features = diffs.mean(axis=1)
        resampled = rejected_since(sampler, before)
    else:
        pool = setting.code_pool()
        factors = varying(pool.indices)
        fixed = _fixed_factors(factors, num_points, rng)
        features = _pool_features(pool, fixed, factors, batch_size, rng)
        resampled = pool.rejected_fraction
    if factors.size < 2:
        # One fixable factor (or none): the label is constant, any classifier is right.
        warn(f"beta_vae: {factors.size} factor(s) vary; the score is trivially 1")
        return {"beta_vae": 1.0, "beta_vae_train": 1.0, "beta_vae_resampled": resampled}
    with threadpool_limits(limits=n_jobs):
        train_acc, eval_acc = _classify(features, fixed, setting.num_train, setting.seed)
    return {"beta_vae": eval_acc, "beta_vae_train": train_acc, "beta_vae_resampled": resampled}


def _fixed_factors(
    factors: NDArray[np.int64], num_points: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """The factor each point holds fixed, uniform over the varying ones."""
    if factors.size == 0:
        return np.zeros(num_points, dtype=np.int64)
    return factors[rng.integers(factors.size, size=num_points)]


def _pool_features(
    pool: CodePool,
    fixed: NDArray[np.int64],
    factors: NDArray[np.int64],
    batch_size: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Mean |z(x1) - z(x2)| over ``batch_size`` pool pairs sharing the fixed factor."""
    first = rng.integers(len(pool.indices), size=(fixed.size, batch_size))
    second = first.copy()
    for k in factors:
        rows = fixed == k
        second[rows] = partners(pool.indices[:, k], first[rows], rng)
    features = np.empty((fixed.size, pool.codes.shape[1]))
    # Chunks bound the (points, batch, D) difference array to ~100 MB.
    step = max(1, 200_000 // max(batch_size, 1))
    for start in range(0, fixed.size, step):
        a, b = first[start : start + step], second[start : start + step]
        features[start : start + step] = np.abs(pool.codes[a] - pool.codes[b]).mean(axis=1)
    return features


def _classify(
    features: NDArray[np.float64], labels: NDArray[np.int64], num_train: int, seed: int
) -> tuple[float, float]:
    """Train/eval accuracy of the reference's ``LogisticRegression()`` on the features."""
    with warnings.catch_warnings():
        # The reference's default max_iter does not always converge; keep its numbers.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(random_state=seed)
        model.fit(features[:num_train], labels[:num_train])
    train_acc = float(np.mean(model.predict(features[:num_train]) == labels[:num_train]))
    eval_acc = float(np.mean(model.predict(features[num_train:]) == labels[num_train:]))
    return train_acc, eval_acc
