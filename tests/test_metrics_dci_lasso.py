"""DCI with Lasso importances (Montero et al. 2021): against sklearn's LassoCV as the paper
fits it, and on codes whose disentanglement is known."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LassoCV

from raystudy.metrics import MetricWarning, dci_lasso, evaluate
from raystudy.metrics.registry import metric_outputs

SIZES = np.array([3, 6, 40, 32, 32])


def _factors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in SIZES], axis=1)


def _codes(factors: np.ndarray, seed: int) -> np.ndarray:
    """The factors in [0, 1] plus a little noise, then five dead dimensions."""
    rng = np.random.default_rng(seed)
    live = factors / (SIZES - 1) + 0.01 * rng.normal(size=factors.shape)
    return np.concatenate([live, 0.01 * rng.normal(size=(len(factors), 5))], axis=1)


def _entropy_score(weights: np.ndarray) -> np.ndarray:
    """1 - H(row) in base row length, straight from Eastwood & Williams (2018)."""
    p = weights / weights.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.nansum(p * np.log(p), axis=1) / np.log(weights.shape[1])
    return 1.0 - h


def test_matches_the_papers_lassocv_fit_and_the_dci_formulas() -> None:
    f = _factors(1500, 0)
    rotation, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(10, 10)))
    z = _codes(f, 2) @ rotation
    got = dci_lasso(z[:1000], f[:1000], z[1000:], f[1000:])
    # Montero et al.: LassoCV, alpha 0.01, 5 folds, codes not standardised.
    targets = f / (SIZES - 1)
    fits = [LassoCV(alphas=[0.01], cv=5).fit(z[:1000], targets[:1000, k]) for k in range(5)]
    r = np.abs(np.stack([m.coef_ for m in fits], axis=1))
    d = float(np.dot(_entropy_score(r[r.sum(1) > 0]), r.sum(1)[r.sum(1) > 0] / r.sum()))
    c = float(np.dot(_entropy_score(r.T), r.sum(0) / r.sum()))
    r2 = [max(0.0, m.score(z[1000:], targets[1000:, k])) for k, m in enumerate(fits)]
    assert got["dci_lasso_d"] == pytest.approx(d, abs=1e-6)
    assert got["dci_lasso_c"] == pytest.approx(c, abs=1e-6)
    assert got["dci_lasso_i"] == pytest.approx(np.mean(r2), abs=1e-6)
    assert set(got) == set(metric_outputs("dci_lasso"))


def test_disentangled_codes_score_one_and_mixing_lowers_d_and_c() -> None:
    f = _factors(3000, 3)
    z = _codes(f, 4)
    clean = evaluate("dci_lasso", z, f, num_train=2000, num_test=1000)
    assert clean["dci_lasso_d"] > 0.99 and clean["dci_lasso_c"] > 0.99
    assert clean["dci_lasso_i"] > 0.95
    pair = np.eye(10)
    pair[3:5, 3:5] = np.array([[1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2)  # x and y mixed
    rotation, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(10, 10)))
    mixed = evaluate("dci_lasso", z @ pair, f, num_train=2000, num_test=1000)
    scrambled = evaluate("dci_lasso", z @ rotation, f, num_train=2000, num_test=1000)
    assert clean["dci_lasso_d"] > mixed["dci_lasso_d"] + 0.1 > scrambled["dci_lasso_d"] + 0.2
    assert clean["dci_lasso_c"] > mixed["dci_lasso_c"] + 0.1 > scrambled["dci_lasso_c"] + 0.2
    # a rotation loses no information; the L1 penalty costs a spread code a little fit
    assert clean["dci_lasso_i"] - 0.1 < scrambled["dci_lasso_i"] <= clean["dci_lasso_i"]


def test_a_constant_factor_is_left_out_with_a_warning() -> None:
    f = _factors(1500, 6)
    z = _codes(f, 7)
    with_const = np.concatenate([f, np.zeros((1500, 1), dtype=int)], axis=1)
    with pytest.warns(MetricWarning, match="dci_lasso: factor"):
        got = dci_lasso(z[:1000], with_const[:1000], z[1000:], with_const[1000:])
    assert got == pytest.approx(dci_lasso(z[:1000], f[:1000], z[1000:], f[1000:]))
