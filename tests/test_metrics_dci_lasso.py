"""DCI with Lasso importances (Montero et al. 2021): against the authors' code's formula and the
paper's text on fixed tables, and on codes whose disentanglement is known."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LassoCV

from raystudy.metrics import MetricWarning, dci_lasso, dci_lasso_paper, evaluate
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


def _authors_d_and_c(r: np.ndarray) -> tuple[float, float]:
    """D and C as the authors' DCIMetrics computes them (mmrl/disent-and-gen,
    src/analysis/metrics.py): EPS-smoothed sums and logs, D in base K, C in base D."""
    eps = 1e-12
    sums_k = r.sum(axis=1, keepdims=True) + eps
    weights = (sums_k / sums_k.sum()).squeeze()
    probs = r / sums_k
    per_code = 1 + (probs * np.log(probs + eps) / np.log(r.shape[1])).sum(axis=1)
    d = float((per_code * weights).sum())
    sums_d = r.sum(axis=0) + eps
    probs = r / sums_d
    per_factor = 1 + (probs * np.log(probs + eps) / np.log(r.shape[0])).sum(axis=0)
    # their C is per factor; Eastwood & Williams weight it by each factor's share of R
    c = float((per_factor * r.sum(axis=0) / r.sum()).sum())
    return d, c


# Fixed tables: three codes that are noisy, partly mixed copies of the factors, plus
# weak and dead ones, so that the penalty zeroes some weights and not others.
def _fixed_table() -> tuple[np.ndarray, np.ndarray]:
    f = _factors(1500, 0)
    rng = np.random.default_rng(1)
    live = f / (SIZES - 1) + 0.2 * rng.normal(size=f.shape)
    mixing = np.eye(5) + 0.3 * rng.normal(size=(5, 5))
    weak = 0.05 * live[:, :2] + rng.normal(size=(1500, 2))
    dead = 0.01 * rng.normal(size=(1500, 3))
    return np.concatenate([live @ mixing, weak, dead], axis=1), f


@pytest.mark.parametrize("seed", [0, 3])
def test_matches_the_authors_lassocv_on_zscored_factors(seed: int) -> None:
    z, f = _fixed_table()
    got = dci_lasso(z[:1000], f[:1000], z[1000:], f[1000:], seed=seed)
    # The authors' DCIMetrics: codes centred, factors z-scored, LassoCV(cv=5,
    # selection='random', alphas=[0.02]) per factor, |coef_| as importances.
    x = z[:1000] - z[:1000].mean(axis=0)
    mean, std = f[:1000].mean(axis=0), f[:1000].std(axis=0) + 1e-12
    y = (f[:1000] - mean) / std
    fits = [
        LassoCV(cv=5, selection="random", alphas=[0.02], random_state=seed).fit(x, y[:, k])
        for k in range(5)
    ]
    r = np.abs(np.stack([m.coef_ for m in fits], axis=1))
    d, c = _authors_d_and_c(r)
    assert got["dci_lasso_d"] == pytest.approx(d, abs=1e-6)
    assert got["dci_lasso_c"] == pytest.approx(c, abs=1e-6)
    x_test = z[1000:] - z[:1000].mean(axis=0)
    y_test = (f[1000:] - mean) / std
    r2 = [max(0.0, m.score(x_test, y_test[:, k])) for k, m in enumerate(fits)]
    assert got["dci_lasso_i"] == pytest.approx(np.mean(r2), abs=1e-6)
    assert set(got) == set(metric_outputs("dci_lasso"))
    # the table is one where the fit is neither trivial nor empty
    assert 0.2 < got["dci_lasso_d"] < 0.95 and (r == 0).any() and (r > 0).sum() > 5


def test_the_papers_text_is_kept_as_dci_lasso_paper_and_is_sparser() -> None:
    z, f = _fixed_table()
    got = dci_lasso_paper(z[:1000], f[:1000], z[1000:], f[1000:])
    # Montero et al. 2021, App. A: LassoCV, alpha 0.01, 5 folds, unstandardised codes;
    # the factors in [0, 1].
    targets = f / (SIZES - 1)
    fits = [LassoCV(alphas=[0.01], cv=5).fit(z[:1000], targets[:1000, k]) for k in range(5)]
    r = np.abs(np.stack([m.coef_ for m in fits], axis=1))
    d = float(np.dot(_entropy_score(r[r.sum(1) > 0]), r.sum(1)[r.sum(1) > 0] / r.sum()))
    c = float(np.dot(_entropy_score(r.T), r.sum(0) / r.sum()))
    r2 = [max(0.0, m.score(z[1000:], targets[1000:, k])) for k, m in enumerate(fits)]
    assert got["dci_lasso_paper_d"] == pytest.approx(d, abs=1e-6)
    assert got["dci_lasso_paper_c"] == pytest.approx(c, abs=1e-6)
    assert got["dci_lasso_paper_i"] == pytest.approx(np.mean(r2), abs=1e-6)
    assert set(got) == set(metric_outputs("dci_lasso_paper"))
    # the stronger penalty zeroes more weights than the authors' code's fit does
    ours = dci_lasso(z[:1000], f[:1000], z[1000:], f[1000:])
    authors = [
        LassoCV(cv=5, selection="random", alphas=[0.02], random_state=0).fit(
            z[:1000], (f[:1000, k] - f[:1000, k].mean()) / f[:1000, k].std()
        )
        for k in range(5)
    ]
    assert (r == 0).sum() > sum((m.coef_ == 0).sum() for m in authors)
    assert got["dci_lasso_paper_i"] < ours["dci_lasso_i"]


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
