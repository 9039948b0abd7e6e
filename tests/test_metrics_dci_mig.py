"""DCI and MIG on synthetic codes whose answer is known.

Factors are sampled uniformly on a dSprites-like grid (sizes 3, 6, 24, 8, 8): dSprites' shape
and scale, an orientation with more values than MIG's 20 bins, and positions coarsened so
the per-class boosted trees of DCI stay cheap in CI (tests/test_metrics_agreement.py and
bench/metrics.py cover the full dSprites sizes). Thresholds are derived from the
definitions, not from a run; each comment says how.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from raystudy.metrics import (
    METRICS,
    completeness,
    dci,
    discretize,
    disentanglement,
    get_metric,
    importance_matrix,
    mig,
    mig_per_factor,
    mutual_info_matrix,
)

SIZES = np.array([3, 6, 24, 8, 8])
N_TRAIN, N_TEST = 1500, 750
# Far below the narrowest step between factor values (1/23 for orientation), so every
# factor stays exactly decodable from its own code dimension.
NOISE = 0.002
PERM = np.array([3, 0, 4, 2, 1])
EXTRA_DIMS = 5


def sample_factors(n: int, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


def aligned_codes(factors: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each factor in its own (permuted) dimension, plus pure-noise dimensions."""
    x = factors / (sizes - 1)
    signal = x[:, PERM] + NOISE * rng.normal(size=x.shape)
    return np.concatenate([signal, rng.normal(size=(len(x), EXTRA_DIMS))], axis=1)


def mixed_codes(factors: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(pos_x, pos_y) and (scale, orientation) each rotated by 45 degrees; shape alone."""
    x = factors / (sizes - 1)
    rotated = np.stack(
        [x[:, 3] + x[:, 4], x[:, 3] - x[:, 4], x[:, 1] + x[:, 2], x[:, 1] - x[:, 2]], axis=1
    ) / math.sqrt(2)
    signal = np.concatenate([rotated, x[:, :1]], axis=1) + NOISE * rng.normal(size=x.shape)
    return np.concatenate([signal, rng.normal(size=(len(x), EXTRA_DIMS))], axis=1)


@pytest.fixture(scope="module")
def grid() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return sample_factors(N_TRAIN, SIZES, rng), sample_factors(N_TEST, SIZES, rng)


@pytest.fixture(scope="module")
def aligned(grid):
    f_train, f_test = grid
    rng = np.random.default_rng(1)
    c_train, c_test = aligned_codes(f_train, SIZES, rng), aligned_codes(f_test, SIZES, rng)
    return c_train, c_test, dci(c_train, f_train, c_test, f_test, seed=0)


@pytest.fixture(scope="module")
def mixed(grid):
    f_train, f_test = grid
    rng = np.random.default_rng(2)
    c_train, c_test = mixed_codes(f_train, SIZES, rng), mixed_codes(f_test, SIZES, rng)
    return dci(c_train, f_train, c_test, f_test, seed=0)


@pytest.fixture(scope="module")
def random_codes(grid):
    f_train, f_test = grid
    rng = np.random.default_rng(3)
    c_train, c_test = rng.normal(size=(N_TRAIN, 10)), rng.normal(size=(N_TEST, 10))
    return c_train, dci(c_train, f_train, c_test, f_test, seed=0)


# --- pure functions -------------------------------------------------------------------


def test_identity_importance_scores_one():
    assert disentanglement(np.eye(5)) == pytest.approx(1.0)
    assert completeness(np.eye(5)) == pytest.approx(1.0)


def test_uniform_importance_scores_zero():
    assert disentanglement(np.ones((5, 5))) == pytest.approx(0.0, abs=1e-12)
    assert completeness(np.ones((10, 5))) == pytest.approx(0.0, abs=1e-12)


def test_unused_codes_do_not_lower_disentanglement_but_split_factors_lower_completeness():
    # Two codes share factor 0 equally: each code still serves one factor (D = 1), but
    # factor 0 spreads over 2 of 4 codes: C_0 = 1 - log_4(2) = 0.5, weighted by 1/2.
    importance = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert disentanglement(importance) == pytest.approx(1.0)
    assert completeness(importance) == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)


def test_disentanglement_weights_codes_by_importance():
    # Code 0 carries 3/4 of the importance and serves one factor (score 1); code 1 is
    # split evenly between the two factors (score 0): D = 3/4.
    importance = np.array([[1.5, 0.0], [0.25, 0.25]])
    assert disentanglement(importance) == pytest.approx(0.75)


def test_all_zero_importance_scores_zero():
    assert disentanglement(np.zeros((3, 2))) == 0.0
    assert completeness(np.zeros((3, 2))) == 0.0


# --- DCI on synthetic codes -----------------------------------------------------------


def test_dci_keys(aligned):
    assert set(aligned[2]) == {"dci_d", "dci_c", "dci_i", "dci_i_train"}


def test_dci_near_one_for_axis_aligned_codes(aligned):
    scores = aligned[2]
    # If a tenth of each factor's importance leaked evenly over the 5 noise dims,
    # C would be 1 - H_10(0.9, 5 x 0.02) = 0.79; exact codes must leak less than that.
    assert scores["dci_d"] > 0.8
    assert scores["dci_c"] > 0.8
    # The noise is 1/10 of the smallest step between values: classes are separable.
    assert scores["dci_i"] > 0.9
    assert scores["dci_i_train"] > 0.9


def test_dci_near_zero_for_random_codes(random_codes):
    scores = random_codes[1]
    assert scores["dci_d"] < 0.15
    assert scores["dci_c"] < 0.15
    # Chance accuracy is at most 1/3 (shape); the other factors are far lower.
    assert scores["dci_i"] < 0.4


def test_mixed_codes_score_lower_disentanglement(aligned, mixed):
    # A code split evenly between 2 of 5 factors scores 1 - log_5(2) = 0.57; four of the
    # five informative codes are like that, so D is near 0.2 * 1 + 0.8 * 0.57 = 0.66.
    assert mixed["dci_d"] < aligned[2]["dci_d"] - 0.15
    # The rotation is invertible: information is still there.
    assert mixed["dci_i"] > 0.5


def test_importance_matrix_points_at_the_right_codes(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    # Shape and scale only: few classes keep the fit cheap.
    importance, train_acc, test_acc = importance_matrix(
        c_train, f_train[:, :2], c_test, f_test[:, :2]
    )
    assert importance.shape == (5 + EXTRA_DIMS, 2)
    assert train_acc.shape == test_acc.shape == (2,)
    # Code j holds factor PERM[j], so factor k is found in code argsort(PERM)[k].
    np.testing.assert_array_equal(importance.argmax(axis=0), np.argsort(PERM)[:2])
    np.testing.assert_allclose(importance.sum(axis=0), 1.0, atol=1e-5)


def test_dci_is_assembled_from_the_importance_matrix(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    args = (c_train[:1000], f_train[:1000, :2], c_test[:500], f_test[:500, :2])
    importance, train_acc, test_acc = importance_matrix(*args, seed=3)
    assert dci(*args, seed=3) == {
        "dci_d": disentanglement(importance),
        "dci_c": completeness(importance),
        "dci_i": test_acc.mean(),
        "dci_i_train": train_acc.mean(),
    }


def test_constant_factor_gets_zero_importance_and_is_left_out_of_dci(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    n_tr, n_te = 600, 300
    with_const = np.concatenate([f_train[:n_tr, :2], np.zeros((n_tr, 1), int)], axis=1)
    with_const_test = np.concatenate([f_test[:n_te, :2], np.zeros((n_te, 1), int)], axis=1)
    args = (c_train[:n_tr], with_const, c_test[:n_te], with_const_test)
    importance, train_acc, test_acc = importance_matrix(*args)
    assert np.all(importance[:, 2] == 0)
    assert train_acc[2] == 1.0 and test_acc[2] == 1.0
    plain = dci(c_train[:n_tr], f_train[:n_tr, :2], c_test[:n_te], f_test[:n_te, :2])
    # Kept, the zero column would raise D's entropy base from 2 to 3 and pad I with a 1.
    assert dci(*args) == pytest.approx(plain)


def test_test_labels_unseen_in_training_count_as_errors():
    rng = np.random.default_rng(4)
    f_train = rng.integers(0, 2, size=(200, 1))
    f_test = np.full((100, 1), 2)
    codes_train = f_train + 0.01 * rng.normal(size=(200, 1))
    codes_test = f_test + 0.01 * rng.normal(size=(100, 1))
    _, train_acc, test_acc = importance_matrix(codes_train, f_train, codes_test, f_test)
    assert train_acc[0] == 1.0
    assert test_acc[0] == 0.0


@pytest.mark.heavy  # tests/test_metrics_agreement.py checks this on every fixture in CI
def test_xgboost_backend_agrees_with_sklearn_reference():
    # Small grid so the sklearn reference stays ~5 s. Aligned and 45-degree mixed codes:
    # a wrong importance type (e.g. per-split "gain") moves D and C by 0.1-0.2 here.
    sizes = np.array([3, 6, 8, 8])
    rng = np.random.default_rng(5)
    f = sample_factors(900, sizes, rng)
    x = f / (sizes - 1)
    rotated = np.stack(
        [x[:, 0] + x[:, 1], x[:, 0] - x[:, 1], x[:, 2] + x[:, 3], x[:, 2] - x[:, 3]], axis=1
    ) / math.sqrt(2)
    for signal in (x[:, [2, 0, 3, 1]], rotated):
        codes = np.concatenate(
            [signal + 0.02 * rng.normal(size=signal.shape), rng.normal(size=(900, 2))], axis=1
        )
        args = (codes[:600], f[:600], codes[600:], f[600:])
        fast = dci(*args, backend="xgboost")
        reference = dci(*args, backend="sklearn")
        assert fast["dci_d"] == pytest.approx(reference["dci_d"], abs=0.05)
        assert fast["dci_c"] == pytest.approx(reference["dci_c"], abs=0.05)
        assert fast["dci_i"] == pytest.approx(reference["dci_i"], abs=0.05)


def test_dci_is_deterministic_for_a_seed(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    args = (c_train[:500], f_train[:500, :2], c_test[:200], f_test[:200, :2])
    assert dci(*args, seed=7) == dci(*args, seed=7)


def test_unknown_backend_is_rejected(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    with pytest.raises(ValueError, match="sklearn"):
        dci(c_train, f_train, c_test, f_test, backend="lightgbm")


# --- MIG ------------------------------------------------------------------------------


def test_discretize_uses_equal_width_bins_over_each_dimension():
    codes = np.array([[0.0, 5.0], [0.49, 5.0], [0.51, 5.0], [1.0, 5.0]])
    binned = discretize(codes, num_bins=2)
    np.testing.assert_array_equal(binned[:, 0], [1, 1, 2, 2])
    # A constant dimension lands in one bin and so carries no information.
    assert len(np.unique(binned[:, 1])) == 1


def test_mutual_info_matrix_of_a_copy_is_the_entropy():
    factors = np.repeat(np.arange(4), 25)[:, None]
    mi = mutual_info_matrix(np.concatenate([factors, np.zeros_like(factors)], axis=1), factors)
    assert mi.shape == (2, 1)
    assert mi[0, 0] == pytest.approx(math.log(4))
    assert mi[1, 0] == pytest.approx(0.0)


def test_mig_near_one_for_codes_equal_to_factors(grid, aligned):
    f_train, _ = grid
    c_train = aligned[0]
    # 20 bins cannot resolve 24 values: the best code keeps ~log 20 of log 24 nats, 0.94;
    # the other factors are kept whole. The mean is ~0.99 less the runner-up's
    # finite-sample bias (<= 19*23/(2N) = 0.15 nats, < 0.14 normalised): well above 0.7.
    assert mig(c_train, f_train)["mig"] > 0.7


def test_mig_near_zero_for_random_codes(grid, random_codes):
    f_train, _ = grid
    assert mig(random_codes[0], f_train)["mig"] < 0.1


def test_mig_is_zero_for_a_factor_duplicated_in_two_codes(grid, aligned):
    f_train, _ = grid
    c_train = aligned[0]
    shape_code = int(np.argsort(PERM)[0])
    duplicated = np.concatenate([c_train, c_train[:, [shape_code]] + 1e-3], axis=1)
    gaps = mig_per_factor(duplicated, f_train)
    # Both copies hold all of H(shape): the gap is 0 up to binning noise.
    assert gaps[0] < 0.05
    assert np.all(gaps[1:] > 0.7)


def test_mig_skips_a_factor_with_a_single_value(grid, aligned):
    f_train, _ = grid
    c_train = aligned[0]
    with_const = np.concatenate([f_train, np.zeros((len(f_train), 1), int)], axis=1)
    gaps = mig_per_factor(c_train, with_const)
    assert np.isnan(gaps[-1])
    assert mig(c_train, with_const)["mig"] == pytest.approx(mig(c_train, f_train)["mig"])


# --- registry -------------------------------------------------------------------------


def test_metric_registry_runs_dci_and_mig(grid, aligned):
    f_train, f_test = grid
    c_train, c_test, _ = aligned
    assert {"dci", "mig"} <= set(METRICS)
    args = (c_train[:500], f_train[:500, :2], c_test[:200], f_test[:200, :2])
    assert set(get_metric("dci")(*args, seed=0, n_jobs=1)) == {
        "dci_d",
        "dci_c",
        "dci_i",
        "dci_i_train",
    }
    assert get_metric("mig")(*args, seed=0, n_jobs=1) == mig(c_train[:500], f_train[:500, :2])


def test_unknown_metric_names_the_known_ones():
    with pytest.raises(ValueError, match=r"dci.*mig"):
        get_metric("not_a_metric")
