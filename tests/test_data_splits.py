"""Selectors and splits: exact index sets, samplers, weak-supervision pairs, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.data import (
    SPLITS,
    Factor,
    FactorSpace,
    SelectorError,
    get_dataset,
    get_split,
    split_from_spec,
)
from raystudy.data.splits.selectors import check, evaluate

# The sets of Dittadi et al. (2021) as the issue states them, written out by hand here so
# that the test does not share a derivation with the code.
HELD_OUT = {1, 4, 7, 10}
TRAIN_HUES = {0, 2, 3, 5, 6, 8, 9, 11}
DITTADI = {
    "ood1_a/train": {0},
    "ood1_a/test": {2, 3, 5, 6, 8, 9, 11},
    "ood1_b/train": {6, 8, 9, 11},
    "ood1_b/test": {0, 2, 3, 5},
    "ood1_c/train": {0, 3, 6, 9},
    "ood1_c/test": {2, 5, 8, 11},
    "ood2_a/train": TRAIN_HUES,
    "ood2_a/test": HELD_OUT,
}
HUE = 5


@pytest.fixture(scope="module")
def ds():
    return get_dataset("color_dsprites")


@pytest.fixture(scope="module")
def dittadi(ds):
    return get_split("dittadi_hues", ds)


@pytest.fixture(scope="module")
def grid(ds) -> np.ndarray:
    return ds.factors.sample(200_000, np.random.default_rng(123))


# --- dittadi_hues --------------------------------------------------------------------------


def test_dittadi_roles_and_scenarios(dittadi) -> None:
    assert dittadi.roles == ["encoder", *DITTADI, "ood2_b/train", "ood2_b/test"]
    assert list(dittadi.scenarios) == ["ood1_a", "ood1_b", "ood1_c", "ood2_a", "ood2_b"]
    for name, scn in dittadi.scenarios.items():
        if name == "ood2_b":
            continue
        assert scn.ood_factors == ("hue",)
        assert scn.probe_domains == ("sim", "sim")
        assert scn.r2_variance == "sample"
    assert "heldout" not in dittadi.roles


def test_dittadi_ood2_b_fits_on_sim_and_tests_on_real(dittadi, grid) -> None:
    scn = dittadi.scenarios["ood2_b"]
    assert scn.probe_domains == ("sim", "real")
    assert scn.domain == "real" and scn.train_domain == "sim"
    # The domain is the shift, not a factor: both sets are the encoder's, every factor scored.
    assert scn.ood_factors == ()
    encoder = np.isin(grid[:, HUE], sorted(TRAIN_HUES))
    assert np.array_equal(dittadi.mask("ood2_b/train", grid), encoder)
    assert np.array_equal(dittadi.mask("ood2_b/test", grid), encoder)


def test_dittadi_on_finger_uses_the_cube_hue() -> None:
    finger = get_dataset("finger")
    split = get_split("dittadi_hues", finger)
    assert list(split.scenarios) == ["ood1_a", "ood1_b", "ood1_c", "ood2_a", "ood2_b"]
    hue = finger.factors.index("hue")
    for role, hues in {**DITTADI, "encoder": TRAIN_HUES}.items():
        x = split.sample(role, 5_000, 3)
        assert set(np.unique(x[:, hue]).tolist()) == hues
        assert finger.feasible(x).all()


def test_encoder_never_yields_a_held_out_hue(dittadi, ds) -> None:
    x = dittadi.sample("encoder", 100_000, 0)
    assert x.shape == (100_000, 6) and x.dtype == np.int64
    ds.factors.validate(x)
    assert set(np.unique(x[:, HUE]).tolist()) == TRAIN_HUES
    # Uniform over the set: each training hue about 1/8, other factors untouched.
    freq = np.bincount(x[:, HUE], minlength=12)[sorted(TRAIN_HUES)] / x.shape[0]
    assert np.allclose(freq, 1 / 8, atol=0.01)
    for col, size in enumerate(ds.factors.sizes[:5]):
        assert np.unique(x[:, col]).size == size


@pytest.mark.parametrize("role", list(DITTADI))
def test_scenario_sets_match_their_definitions(dittadi, grid, role: str) -> None:
    x = dittadi.sample(role, 20_000, 1)
    assert set(np.unique(x[:, HUE]).tolist()) == DITTADI[role]
    # mask() and sample() agree, and mask() is exactly the defined set on the grid.
    assert dittadi.mask(role, x).all()
    expected = np.isin(grid[:, HUE], sorted(DITTADI[role]))
    assert np.array_equal(dittadi.mask(role, grid), expected)


def test_ood1_sets_lie_inside_the_encoder_set_and_ood2_outside(dittadi, grid) -> None:
    encoder = dittadi.mask("encoder", grid)
    assert np.array_equal(encoder, np.isin(grid[:, HUE], sorted(TRAIN_HUES)))
    for scn in ("ood1_a", "ood1_b", "ood1_c"):
        for part in ("train", "test"):
            assert not (dittadi.mask(f"{scn}/{part}", grid) & ~encoder).any()
    assert not (dittadi.mask("ood2_a/test", grid) & encoder).any()


def test_sampling_is_reproducible(dittadi) -> None:
    a = dittadi.sample("ood1_b/test", 500, 7)
    b = dittadi.sample("ood1_b/test", 500, np.random.default_rng(7))
    c = dittadi.sample("ood1_b/test", 500, 8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_split_needs_hue(ds) -> None:
    with pytest.raises(ValueError, match=r"needs factor 'hue'.*'dsprites'.*color_dsprites"):
        get_split("dittadi_hues", get_dataset("dsprites"))


def test_unknown_split_suggests_a_name(ds) -> None:
    with pytest.raises(ValueError, match=r"allowed: .*iid.*did you mean 'dittadi_hues'"):
        get_split("dittadi_hue", ds)
    assert set(SPLITS) >= {"dittadi_hues", "iid"}


def test_unknown_role(dittadi) -> None:
    with pytest.raises(ValueError, match=r"did you mean 'ood1_a/train'"):
        dittadi.mask("ood1_a/trian", np.zeros((1, 6), dtype=np.int64))


# --- iid -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dsprites", "color_dsprites"])
def test_iid_probe_sets_are_complementary_and_80_20(name: str) -> None:
    ds = get_dataset(name)
    split = get_split("iid", ds)
    assert split.roles == ["encoder", "iid/train", "iid/test"]
    assert split.scenarios["iid"].ood_factors == ()
    x = ds.factors.sample(200_000, np.random.default_rng(5))
    train, test = split.mask("iid/train", x), split.mask("iid/test", x)
    assert np.all(train ^ test)
    assert train.mean() == pytest.approx(0.8, abs=0.005)
    assert split.mask("encoder", x).all()
    # Membership is a property of the combination, not of the batch it arrives in.
    perm = np.random.default_rng(0).permutation(x.shape[0])
    assert np.array_equal(split.mask("iid/train", x[perm]), train[perm])
    assert split.mask("iid/test", split.sample("iid/test", 5_000, 2)).all()


# --- weak-supervision pairs ----------------------------------------------------------------


def test_pairs_differ_in_exactly_one_factor_inside_the_encoder_set(dittadi, ds) -> None:
    first, second = dittadi.sample_pairs("encoder", 6_000, 1, 0)
    assert first.shape == second.shape == (6_000, 6)
    differs = first != second
    assert np.all(differs.sum(axis=1) == 1)
    assert dittadi.mask("encoder", first).all()
    assert dittadi.mask("encoder", second).all()
    # Every factor gets changed, about equally often (all six vary in the encoder set).
    per_factor = differs.sum(axis=0) / first.shape[0]
    assert np.allclose(per_factor, 1 / 6, atol=0.02)
    hue_changed = differs[:, HUE]
    assert set(np.unique(second[hue_changed, HUE]).tolist()) == TRAIN_HUES


def test_pairs_keep_a_fixed_factor_fixed(dittadi) -> None:
    # ood1_a/train has a single hue: hue cannot change, so another factor always does.
    first, second = dittadi.sample_pairs("ood1_a/train", 2_000, 1, 3)
    assert np.all((first != second).sum(axis=1) == 1)
    assert np.all(first[:, HUE] == 0) and np.all(second[:, HUE] == 0)


def test_pairs_in_a_set_that_is_not_a_box(ds) -> None:
    # A random half of the grid: a changed partner often falls outside and must be redrawn.
    split = split_from_spec({"encoder": {"random": {"p": 0.5, "seed": 9}}}, ds)
    first, second = split.sample_pairs("encoder", 3_000, 1, 1)
    assert np.all((first != second).sum(axis=1) == 1)
    assert split.mask("encoder", first).all() and split.mask("encoder", second).all()


def test_pairs_with_k_above_one_and_too_many(dittadi) -> None:
    first, second = dittadi.sample_pairs("encoder", 500, 2, 0)
    assert np.all((first != second).sum(axis=1) == 2)
    with pytest.raises(ValueError, match="cannot change k=6"):
        dittadi.sample_pairs("ood1_a/train", 10, 6, 0)


# --- the selector language -----------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> FactorSpace:
    return FactorSpace(
        (
            Factor("a", 3, (0.0, 1.0, 2.0)),
            Factor("b", 4, (0.0, 1.0, 2.0, 3.0)),
        )
    )


@pytest.fixture(scope="module")
def every(small) -> np.ndarray:
    """All 12 combinations of ``small``, row-major."""
    return np.array([[a, b] for a in range(3) for b in range(4)], dtype=np.int64)


def picked(every: np.ndarray, mask: np.ndarray) -> set[tuple[int, int]]:
    return {tuple(row) for row in every[mask].tolist()}


def pairs_where(every: np.ndarray, predicate) -> set[tuple[int, int]]:
    return {(a, b) for a, b in every.tolist() if predicate(a, b)}


@pytest.mark.parametrize(
    ("selector", "predicate"),
    [
        (None, lambda a, b: True),
        ({}, lambda a, b: True),
        ({"a": [0, 2]}, lambda a, b: a in (0, 2)),
        ({"a": {"in": [1]}}, lambda a, b: a == 1),
        ({"a": 2}, lambda a, b: a == 2),
        ({"b": {"ge": 2}}, lambda a, b: b >= 2),
        ({"b": {"le": 1}}, lambda a, b: b <= 1),
        ({"b": {"ge": 1, "le": 2}}, lambda a, b: 1 <= b <= 2),
        ({"b": {"in": [0, 1, 3], "ge": 1}}, lambda a, b: b in (1, 3)),
        ({"a": [0], "b": {"ge": 3}}, lambda a, b: a == 0 and b == 3),
        ({"all": [{"a": [0, 1]}, {"b": [1, 2]}]}, lambda a, b: a <= 1 and b in (1, 2)),
        ({"any": [{"a": [0]}, {"b": [3]}]}, lambda a, b: a == 0 or b == 3),
        ({"not": {"a": [1]}}, lambda a, b: a != 1),
        ({"not": {"any": [{"a": [0]}, {"b": [0]}]}}, lambda a, b: a != 0 and b != 0),
        ({"all": []}, lambda a, b: True),
        ({"any": []}, lambda a, b: False),
        ({"a": [1], "not": {"b": [2]}}, lambda a, b: a == 1 and b != 2),
    ],
)
def test_selector_language(small, every, selector, predicate) -> None:
    assert picked(every, evaluate(selector, every, small)) == pairs_where(every, predicate)


@pytest.mark.parametrize(("p", "seed"), [(0.6745, 0), (0.3, 7), (0.0, 1), (1.0, 2)])
def test_exact_random_selector_holds_round_p_n(p: float, seed: int) -> None:
    big = FactorSpace(tuple(Factor(n, 37, tuple(range(37))) for n in ("x", "y", "z")))
    x = np.stack(np.meshgrid(*[np.arange(37)] * 3, indexing="ij"), -1).reshape(-1, 3)
    chosen = evaluate({"random": {"p": p, "seed": seed, "exact": True}}, x, big)
    assert chosen.sum() == round(p * 37**3)
    rest = evaluate({"not": {"random": {"p": p, "seed": seed, "exact": True}}}, x, big)
    assert np.all(chosen ^ rest)
    # Per combination, as the inexact form: a shuffled batch gets the same answers.
    perm = np.random.default_rng(0).permutation(x.shape[0])
    shuffled = evaluate({"random": {"p": p, "seed": seed, "exact": True}}, x[perm], big)
    assert np.array_equal(shuffled, chosen[perm])
    if 0 < p < 1:
        other = evaluate({"random": {"p": p, "seed": seed + 1, "exact": True}}, x, big)
        assert other.sum() == chosen.sum() and not np.array_equal(other, chosen)


def test_exact_random_selector_refuses_huge_grids() -> None:
    huge = get_dataset("finger").factors  # 2.9e9 combinations
    with pytest.raises(SelectorError, match=r"^at\.random\.exact: the grid has 2916000000"):
        check({"random": {"p": 0.5, "exact": True}}, huge, "at")
    with pytest.raises(SelectorError, match=r"^at\.random\.exact: expected true or false"):
        check({"random": {"p": 0.5, "exact": "yes"}}, huge, "at")


def test_random_selector_is_a_fixed_fraction_and_its_complement(small) -> None:
    big = FactorSpace(tuple(Factor(n, 50, tuple(range(50))) for n in ("x", "y", "z")))
    x = np.stack(np.meshgrid(*[np.arange(50)] * 3, indexing="ij"), -1).reshape(-1, 3)
    chosen = evaluate({"random": {"p": 0.3, "seed": 4}}, x, big)
    assert chosen.mean() == pytest.approx(0.3, abs=0.005)
    rest = evaluate({"not": {"random": {"p": 0.3, "seed": 4}}}, x, big)
    assert np.all(chosen ^ rest)
    other_seed = evaluate({"random": {"p": 0.3, "seed": 5}}, x, big)
    assert 0.05 < (chosen != other_seed).mean() < 0.6
    # Per combination: a row gets the same answer alone, shuffled or duplicated.
    rows = x[[17, 4_242, 99_999, 17]]
    assert np.array_equal(
        evaluate({"random": {"p": 0.3, "seed": 4}}, rows, big), chosen[rows @ [2500, 50, 1]]
    )
    assert evaluate({"random": {"p": 0.0}}, x, big).sum() == 0
    assert evaluate({"random": {"p": 1.0}}, x, big).all()


# --- selector errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "pattern"),
    [
        ({"hu": [0]}, r"^at\.hu: unknown factor 'hu'; allowed: .*pos_x.*\(did you mean 'hue'\?\)"),
        (
            {"hue": [12]},
            r"^at\.hue\[0\]: index 12 is out of range for factor 'hue' \(allowed 0\.\.11\)",
        ),
        ({"hue": {"ge": -1}}, r"^at\.hue\.ge: index -1 .*0\.\.11"),
        ({"hue": {"gt": 3}}, r"^at\.hue: unknown operator 'gt'; allowed: in, ge, le"),
        (
            {"any": [{"hue": [0]}, {"pos_x": {"in": [40]}}]},
            r"^at\.any\[1\]\.pos_x\.in\[0\]: .*'pos_x'.*0\.\.31",
        ),
        ({"not": {"shap": [0]}}, r"^at\.not\.shap: .*did you mean 'shape'"),
        ({"hue": [True]}, r"integer indices"),
        ({"hue": ["red"]}, r"integer indices"),
        ({"random": {"p": 1.5}}, r"^at\.random\.p: .*\[0, 1\]"),
        ({"random": {"q": 1}}, r"^at\.random: expected \{p"),
        ({"all": {"hue": [0]}}, r"^at\.all: expected a list"),
        ([{"hue": [0]}], r"^at: a selector must be a mapping"),
    ],
)
def test_selector_errors_name_the_field(ds, selector, pattern: str) -> None:
    with pytest.raises(SelectorError, match=pattern):
        check(selector, ds.factors, "at")


def test_selector_error_is_a_value_error() -> None:
    assert issubclass(SelectorError, ValueError)


# --- user-defined splits -------------------------------------------------------------------


def test_split_from_spec_builds_a_working_split(ds, grid) -> None:
    spec = {
        "name": "left_right",
        "encoder": {"pos_x": {"le": 15}},
        "scenarios": {
            "right": {
                "train": {"pos_x": {"le": 15}},
                "test": {"pos_x": {"ge": 16}},
                "ood_factors": ["pos_x"],
            }
        },
    }
    split = split_from_spec(spec, ds)
    assert split.name == "left_right"
    assert split.roles == ["encoder", "right/train", "right/test"]
    assert split.scenarios["right"].ood_factors == ("pos_x",)
    assert np.array_equal(split.mask("right/test", grid), grid[:, 3] >= 16)
    assert split.sample("encoder", 10_000, 0)[:, 3].max() <= 15


def test_split_from_spec_with_heldout_and_probe_domains(ds, grid) -> None:
    spec = {
        "encoder": {"pos_x": {"le": 15}},
        "heldout": {"pos_x": {"ge": 16}},
        "scenarios": {
            "sim2real": {
                "train": {"pos_x": {"le": 15}},
                "test": {"pos_x": {"le": 15}},
                "train_domain": "sim",
                "domain": "real",
                "r2_variance": "grid",
            }
        },
    }
    split = split_from_spec(spec, ds)
    assert split.roles == ["encoder", "sim2real/train", "sim2real/test", "heldout"]
    assert np.array_equal(split.mask("heldout", grid), grid[:, 3] >= 16)
    scn = split.scenarios["sim2real"]
    assert scn.probe_domains == ("sim", "real") and scn.r2_variance == "grid"
    assert split.sample("heldout", 10_000, 0)[:, 3].min() == 16


def test_a_single_combination_can_be_sampled(ds) -> None:
    only = {"shape": 2, "scale": 0, "orientation": 39, "pos_x": 31, "pos_y": 0, "hue": 7}
    split = split_from_spec({"encoder": only}, ds)
    x = split.sample("encoder", 100, 0)
    assert np.all(x == [2, 0, 39, 31, 0, 7])


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        (
            {"scenarios": {"s": {"train": {"hue": {"ge": 5, "le": 3}}, "test": {}}}},
            r"^split\.scenarios\.s\.train: selects nothing.*'hue'",
        ),
        (
            {"scenarios": {"s": {"train": {}, "test": {"not": {}}}}},
            r"^split\.scenarios\.s\.test: selects nothing",
        ),
        (
            {"encoder": {"all": [{"hue": [0]}, {"not": {"hue": [0]}}]}},
            r"^split\.encoder: selects nothing",
        ),
        (
            {"scenarios": {"s": {"train": {"colour": [0]}, "test": {}}}},
            r"^split\.scenarios\.s\.train\.colour: unknown factor 'colour'; allowed: ",
        ),
        (
            {"scenarios": {"s": {"train": {}, "test": {"hue": [0, 99]}}}},
            r"^split\.scenarios\.s\.test\.hue\[1\]: index 99 .*'hue' \(allowed 0\.\.11\)",
        ),
        ({"scenarios": {"s": {"train": {}}}}, r"^split\.scenarios\.s\.test: missing"),
        ({"encoders": {}}, r"^split: unknown field 'encoders'; .*did you mean 'encoder'"),
        (
            {"scenarios": {"s": {"train": {}, "test": {}, "domain": "cartoon"}}},
            r"^split\.scenarios\.s\.domain: .*'cartoon'.*allowed: sim, real, photo",
        ),
        (
            {"scenarios": {"s": {"train": {}, "test": {}, "train_domain": "cartoon"}}},
            r"^split\.scenarios\.s\.train_domain: .*'cartoon'.*allowed: sim, real, photo",
        ),
        (
            {"scenarios": {"s": {"train": {}, "test": {}, "r2_variance": "grids"}}},
            r"^split\.scenarios\.s\.r2_variance: unknown choice 'grids'.*did you mean 'grid'",
        ),
        (
            {"encoder": {"hue": {"le": 5}}, "heldout": {"hue": {"ge": 5}}},
            r"^split\.heldout: overlaps the encoder set \(e\.g\. \{.*'hue': 5",
        ),
        ({"heldout": {"hue": {"ge": 12}}}, r"^split\.heldout\.hue\.ge: index 12"),
        (
            {"heldout": {"all": [{"hue": [1]}, {"hue": [2]}]}},
            r"^split\.heldout: selects nothing",
        ),
        (
            {"scenarios": {"s": {"train": {}, "test": {}, "ood_factors": ["hues"]}}},
            r"^split\.scenarios\.s\.ood_factors\[0\]: .*did you mean 'hue'",
        ),
    ],
)
def test_split_spec_errors_name_the_field(ds, spec, pattern: str) -> None:
    with pytest.raises(SelectorError, match=pattern):
        split_from_spec(spec, ds)
