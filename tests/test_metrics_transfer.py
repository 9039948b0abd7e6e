"""Transfer of downstream probes, on representations whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.metrics import PROBES, get_probe, register_probe, transfer
from raystudy.metrics.probes import Probe

NAMES = ("shape", "scale", "orientation", "pos_x", "pos_y", "hue", "colour")
# color_dsprites with one extra constant factor, which must be dropped.
SIZES = (3, 6, 40, 32, 32, 12, 1)
N_TRAIN, N_TEST = 2000, 1000
REGRESSED = NAMES[:-1]


def sample(n: int, rng: np.random.Generator, hues: np.ndarray) -> np.ndarray:
    factors = np.stack([rng.integers(0, s, n) for s in SIZES], axis=1)
    factors[:, 5] = rng.choice(hues, n)
    return factors


def as_code(factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The normalised factors in a shuffled order, tiny noise, plus 4 pure-noise dims."""
    x = factors[:, :6] / (np.array(SIZES[:6]) - 1)
    x = x[:, [4, 2, 0, 5, 1, 3]] + 1e-3 * rng.normal(size=x.shape)
    return np.concatenate([x, rng.normal(size=(len(x), 4))], axis=1)


@pytest.fixture(scope="module")
def iid_data():
    rng = np.random.default_rng(0)
    y_train = sample(N_TRAIN, rng, np.arange(12))
    y_test = sample(N_TEST, rng, np.arange(12))
    return as_code(y_train, rng), y_train, as_code(y_test, rng), y_test


@pytest.fixture(scope="module")
def ood_data():
    # Probes see hues 0..7 and are tested on 8..11: outside the training range of hue.
    rng = np.random.default_rng(1)
    y_train = sample(N_TRAIN, rng, np.arange(8))
    y_test = sample(N_TEST, rng, np.arange(8, 12))
    return as_code(y_train, rng), y_train, as_code(y_test, rng), y_test


@pytest.mark.parametrize("probe", ["gbt", "mlp", "linear"])
def test_factors_as_representation_transfer_almost_perfectly(iid_data, probe):
    z_train, y_train, z_test, y_test = iid_data
    if probe == "mlp":  # one network per factor: half the points keep it a few seconds
        z_train, y_train = z_train[:1000], y_train[:1000]
    scores = transfer(z_train, y_train, z_test, y_test, SIZES, NAMES, probe=probe, seed=0)
    # Every factor is one code dimension (noise 1e-3): a probe only has to learn the
    # identity. 0.05 is a fifth of chance (0.25) and >1 step of the 32-valued factors.
    assert scores["mae"] < 0.05
    assert scores["r2"] > 0.9
    for name in REGRESSED:
        assert scores[f"mae/{name}"] < 0.1


@pytest.mark.parametrize("probe", ["gbt", "mlp", "linear"])
def test_noise_representation_transfers_at_chance(probe):
    rng = np.random.default_rng(2)
    y_train = sample(N_TRAIN, rng, np.arange(12))
    y_test = sample(N_TEST, rng, np.arange(12))
    z_train, z_test = rng.normal(size=(N_TRAIN, 10)), rng.normal(size=(N_TEST, 10))
    scores = transfer(z_train, y_train, z_test, y_test, SIZES, NAMES, probe=probe, seed=0)
    # The best input-free guess (the mean) has MAE 0.25 on uniform targets and more on
    # coarse ones (1/3 for shape); a probe fitted to noise can only do worse on new points.
    assert scores["mae"] > 0.2
    assert scores["r2"] < 0.05


def test_a_factor_held_at_one_value_for_the_probe_does_not_break_the_mlp():
    # OOD1-A (Dittadi et al. 2021): probes fit on one hue and are tested on the others. The
    # hue dimension of a disentangled code is constant up to noise on the probe's training
    # set; standardising by that spread sent the test codes 100s of sigmas out (MAE ~1.3,
    # worse than chance), penalising exactly the disentangled codes.
    rng = np.random.default_rng(4)
    y_train = sample(1000, rng, np.array([0]))
    y_test = sample(500, rng, np.arange(1, 12))
    z_train, z_test = as_code(y_train, rng), as_code(y_test, rng)
    scores = transfer(
        z_train, y_train, z_test, y_test, SIZES, NAMES, ood_factors=["hue"], probe="mlp"
    )
    assert scores["mae"] < 0.1  # chance is 0.25


def test_the_mlp_fits_each_factor_on_its_own(iid_data):
    # Dittadi et al. (2021), Sec. 4: "We independently train one predictor per factor".
    z_train, y_train, z_test, _ = (a[:400] for a in iid_data)
    targets = y_train[:, :6] / (np.array(SIZES[:6]) - 1)
    other = targets.copy()
    other[:, 1:] = np.random.default_rng(9).uniform(size=(400, 5))  # every other target
    first = get_probe("mlp", seed=0).fit(z_train, targets).predict(z_test)
    again = get_probe("mlp", seed=0).fit(z_train, other).predict(z_test)
    alone = get_probe("mlp", seed=0).fit(z_train, targets[:, 0]).predict(z_test)
    assert first.shape == (len(z_test), 6)
    # The networks train as one batch (mlp_torch), which shrinks as each stops: beside other
    # targets, or alone, factor 0's network runs other matrix-product kernels, so it is the
    # same network to float32 rounding (scikit-learn's per-factor fits are equal exactly).
    np.testing.assert_allclose(first[:, 0], again[:, 0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(first[:, 0], alone[:, 0], rtol=0, atol=1e-5)
    assert not np.array_equal(first[:, 1], again[:, 1])


def test_keys_cover_every_regressed_factor_and_drop_constant_ones(iid_data):
    scores = transfer(*iid_data, SIZES, NAMES, probe="gbt")
    expected = {"mae", "r2"} | {f"{m}/{n}" for m in ("mae", "r2") for n in REGRESSED}
    assert set(scores) == expected
    assert all(isinstance(v, float) for v in scores.values())


def test_ood_factor_is_reported_but_left_out_of_the_mean(ood_data):
    scores = transfer(*ood_data, SIZES, NAMES, ood_factors=["hue"], probe="gbt")
    in_dist = [scores[f"mae/{n}"] for n in REGRESSED if n != "hue"]
    assert scores["mae"] == pytest.approx(np.mean(in_dist))
    assert scores["r2"] == pytest.approx(np.mean([scores[f"r2/{n}"] for n in REGRESSED[:5]]))
    # Trees cannot predict beyond the largest training hue, 7/11: every test hue is at
    # least 1/11 above it, so the hue error is >= 0.09 while the others stay small.
    assert scores["mae/hue"] > 0.09
    assert scores["mae"] < 0.05


@pytest.mark.parametrize("probe", ["gbt", "mlp", "linear"])
def test_same_seed_same_scores(iid_data, probe):
    # A few hundred points are enough to see any nondeterminism, and keep the MLP cheap.
    small = tuple(a[:200] for a in iid_data)
    assert transfer(*small, SIZES, NAMES, probe=probe, seed=3) == transfer(
        *small, SIZES, NAMES, probe=probe, seed=3
    )


def test_grid_r2_uses_the_uniform_grid_variance_of_each_factor(ood_data):
    y_test = ood_data[3]
    sample = transfer(*ood_data, SIZES, NAMES, ood_factors=["hue"], probe="linear")
    grid = transfer(
        *ood_data, SIZES, NAMES, ood_factors=["hue"], probe="linear", r2_variance="grid"
    )
    # R2 = 1 - MSE / Var: recover each MSE from the sample convention, check the grid one.
    for k, name in enumerate(REGRESSED):
        size = SIZES[k]
        t = y_test[:, k] / (size - 1)
        mse = (1 - sample[f"r2/{name}"]) * np.var(t)
        grid_var = np.var(np.arange(size) / (size - 1))
        assert grid[f"r2/{name}"] == pytest.approx(1 - mse / grid_var, abs=1e-9), name
        assert grid[f"mae/{name}"] == sample[f"mae/{name}"]
    # Test hues cover 4 of 12 values: their own variance is a ninth of the grid's, so the
    # sample convention punishes the same error nine times harder.
    assert grid["r2/hue"] > sample["r2/hue"]
    with pytest.raises(ValueError, match="r2_variance"):
        transfer(*ood_data, SIZES, NAMES, r2_variance="test")


def test_the_linear_probe_extrapolates_where_trees_cannot(ood_data):
    # Hue is one code dimension exactly: a line through the training hues continues to the
    # unseen ones, while trees stop at the largest training hue (see the test above).
    linear = transfer(*ood_data, SIZES, NAMES, ood_factors=["hue"], probe="linear")
    assert linear["mae/hue"] < 0.01


def test_unknown_probe_names_the_registered_ones(iid_data):
    with pytest.raises(ValueError, match=r"gbt.*linear.*mlp"):
        get_probe("svm")
    with pytest.raises(ValueError, match="svm"):
        transfer(*iid_data, SIZES, NAMES, probe="svm")


def test_unknown_ood_factor_is_rejected(iid_data):
    with pytest.raises(ValueError, match="colour_typo"):
        transfer(*iid_data, SIZES, NAMES, ood_factors=["colour_typo"])


def test_registered_probe_is_used_by_transfer(iid_data):
    @register_probe("_test_mean")
    class MeanProbe:
        def __init__(self, seed: int = 0, n_jobs: int = 1) -> None:
            self.seed = seed

        def fit(self, X, Y) -> Probe:
            self.mean_ = np.asarray(Y).mean(axis=0)
            return self

        def predict(self, X) -> np.ndarray:
            return np.tile(self.mean_, (len(X), 1))

    try:
        scores = transfer(*iid_data, SIZES, NAMES, probe="_test_mean")
        # The constant mean predictor on uniform targets: E|t - 1/2| = 1/4 for the fine
        # factors, 1/3 for shape, 0.3 for scale, 0.27 for hue: mean ~0.28.
        assert 0.22 < scores["mae"] < 0.32
    finally:
        PROBES.unregister("_test_mean")


def test_the_own_readout_is_the_code_itself_and_extrapolates(ood_data):
    """Schott et al.'s supervised models are scored on their outputs: a factor-sized code
    (column k = factor k, as supervised and gt_decoder have) is the prediction, unfitted."""
    _, y_train, _, y_test = ood_data
    rng = np.random.default_rng(5)
    code = [y / np.maximum(np.array(SIZES) - 1, 1) for y in (y_train, y_test)]
    code[1] = code[1] + rng.normal(0, 0.01, size=code[1].shape)  # an imperfect model
    scores = transfer(code[0], y_train, code[1], y_test, SIZES, NAMES, probe="own")
    t_test = y_test[:, :6] / (np.array(SIZES[:6]) - 1)
    for k, name in enumerate(REGRESSED):
        expected = np.mean(np.abs(code[1][:, k] - t_test[:, k]))
        assert scores[f"mae/{name}"] == pytest.approx(expected)
    # Held-out hues 8..11: no fitted readout caps the prediction at the training range.
    assert scores["r2/hue"] > 0.9 and "mae/colour" not in scores
    with pytest.raises(ValueError, match=r"reads the code as the factors.*\(N, 7\)"):
        transfer(code[0][:, :6], y_train, code[1][:, :6], y_test, SIZES, NAMES, probe="own")


def test_the_own_readout_applies_only_to_factor_sized_codes():
    from raystudy.metrics.probes import probe_applies

    assert probe_applies("own", code_is_factor_sized=True)
    assert not probe_applies("own", code_is_factor_sized=False)
    assert probe_applies("gbt", code_is_factor_sized=False)
