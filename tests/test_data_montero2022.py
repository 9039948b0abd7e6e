"""Montero et al. (2022) conditions: each held-out set is the paper's, written here in factor
VALUES as its code writes them (``mmrl/lost-in-latent-space``,
``scripts/configs/datasplits.py``), independently of the module's index translation, and its
size is counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from raystudy.data import GroundTruthDataset, SelectorError, get_dataset, get_split
from raystudy.data.splits.papers.montero2022 import CONDITIONS, KINDS, MODIFIERS
from raystudy.data.splits.registry import SplitOptionError, split_from_config

# The official factor values (the datasets' documentation, and the paper code's tables).
HUES = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
VALUES = {
    "dsprites": [
        np.array([1.0, 2.0, 3.0]),  # square, ellipse, heart
        np.linspace(0.5, 1.0, 6),
        np.linspace(0.0, 2 * np.pi, 40),
        np.linspace(0.0, 1.0, 32),
        np.linspace(0.0, 1.0, 32),
    ],
    "shapes3d": [
        HUES,
        HUES,
        HUES,
        np.linspace(0.75, 1.25, 8),
        np.arange(4.0),
        np.linspace(-30.0, 30.0, 15),
    ],
    "mpi3d": [np.arange(float(n)) for n in (6, 6, 2, 3, 3, 40, 40)],
}
A120, A240 = 4 * np.pi / 3, 2 * np.pi / 3  # sic: the code's names, swapped


def paper_test_mask(family: str, condition: str, v: np.ndarray) -> np.ndarray:
    """The paper's held-out mask on factor values ``v`` (N, K)."""
    if family == "dsprites":
        shp, scl, rot, tx, ty = v.T
        return {
            "loo": (shp == 2)  # factor_classes == 1
            & (scl > 0.6)
            & (rot > 0.0)
            & (rot < A120)
            & (rot > A240)
            & (tx > 0.66)
            & (ty > 0.66),
            "shape2tx": (shp == 1) & (tx > 0.5),
            "blank_side": tx > 0.5,
        }[condition]
    if family == "shapes3d":
        fh, wh, oh, scl, shp, orient = v.T
        return {
            "loo": (oh >= 0.8)
            & (wh >= 0.8)
            & (fh >= 0.8)
            & (scl >= 1.1)
            & (shp == 1)
            & (orient > 20),
            "shape2ohue": (shp == 3.0) & (oh >= 0.5),
            "shape2ohueq": (shp == 3.0) & (oh <= 0.25),
            "fhue2whue": (fh >= 0.75) & (wh <= 0.5),
            "ohue2whue": (oh >= 0.75) & (wh <= 0.5),
            "fhue_gt50": ~(fh < 0.5),
        }[condition]
    oc, shp, sz, camh, bkg, hx, vx = v.T
    return {
        "loo": (oc == 5)
        & (shp == 2)
        & (sz == 1)
        & (camh == 1)
        & (bkg == 1)
        & (hx > 35)
        & (vx > 35),
        "cyl2horz": (hx < 20) & (shp == 2),
        "objc2horz": (hx < 20) & (oc == 2),
        "horz_gt20": hx > 20,
        "objc_gt3": oc > 3,
    }[condition]


def paper_train_mask(family: str, condition: str, v: np.ndarray) -> np.ndarray:
    # Every condition trains on the complement except MPI3D's horz_gt20 (hx < 20).
    if condition == "horz_gt20":
        return v[:, 5] < 20
    return ~paper_test_mask(family, condition, v)


# The held-out counts, multiplied out by hand from the conditions above.
COUNTS = {
    ("dsprites", "loo"): 1 * 4 * 12 * 11 * 11,
    ("dsprites", "shape2tx"): 1 * 6 * 40 * 16 * 32,
    ("dsprites", "blank_side"): 3 * 6 * 40 * 16 * 32,
    ("shapes3d", "loo"): 2 * 2 * 2 * 3 * 1 * 3,
    ("shapes3d", "shape2ohue"): 10 * 10 * 5 * 8 * 1 * 15,
    ("shapes3d", "shape2ohueq"): 10 * 10 * 3 * 8 * 1 * 15,
    ("shapes3d", "fhue2whue"): 2 * 6 * 10 * 8 * 4 * 15,
    ("shapes3d", "ohue2whue"): 10 * 6 * 2 * 8 * 4 * 15,
    ("shapes3d", "fhue_gt50"): 5 * 10 * 10 * 8 * 4 * 15,
    ("mpi3d", "loo"): 1 * 1 * 1 * 1 * 1 * 4 * 4,
    ("mpi3d", "cyl2horz"): 6 * 1 * 2 * 3 * 3 * 20 * 40,
    ("mpi3d", "objc2horz"): 1 * 6 * 2 * 3 * 3 * 20 * 40,
    ("mpi3d", "horz_gt20"): 6 * 6 * 2 * 3 * 3 * 19 * 40,
    ("mpi3d", "objc_gt3"): 2 * 6 * 2 * 3 * 3 * 40 * 40,
}
EXTRAPOLATED = {"blank_side": "pos_x", "fhue_gt50": "floor_hue", "horz_gt20": "horizontal_axis"}
EXTRAPOLATED["objc_gt3"] = "object_color"


@pytest.fixture(scope="module")
def datasets() -> dict[str, GroundTruthDataset]:
    return {
        "dsprites": get_dataset("dsprites", orientation_grid="closed"),
        "shapes3d": get_dataset("shapes3d"),
        "mpi3d": get_dataset("mpi3d"),
    }


def full_grid(sizes: list[int]) -> np.ndarray:
    return np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1).reshape(-1, len(sizes))


@pytest.fixture(scope="module")
def grids(datasets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per family: the full index grid and its factor values."""
    out = {}
    for family, ds in datasets.items():
        idx = full_grid(ds.factors.sizes)
        values = np.stack([VALUES[family][k][idx[:, k]] for k in range(idx.shape[1])], 1)
        out[family] = (idx, values)
    return out


def test_every_condition_is_tested() -> None:
    # circles and simple: tests/test_data_circles.py.
    official = {(f, c) for c, fams in CONDITIONS.items() for f in fams if f in VALUES}
    assert official == set(COUNTS)


@pytest.mark.parametrize(("family", "condition"), list(COUNTS))
def test_held_out_set_is_the_papers(datasets, grids, family, condition) -> None:
    ds, (idx, values) = datasets[family], grids[family]
    split = get_split(f"montero2022_{condition}", ds)
    test = paper_test_mask(family, condition, values)
    train = paper_train_mask(family, condition, values)
    assert test.sum() == COUNTS[(family, condition)]
    assert np.array_equal(split.mask("heldout", idx), test)
    assert np.array_equal(split.mask("encoder", idx), train)
    assert not (train & test).any()
    # The one probe scenario: fit on the encoder's set, scored on the held-out one.
    split.check_nonempty()
    scn = split.scenarios["test"]
    assert list(split.scenarios) == ["test"] and scn.r2_variance == "grid"
    assert scn.train == split.encoder and scn.test == split.heldout
    assert scn.ood_factors == ((EXTRAPOLATED[condition],) if condition in EXTRAPOLATED else ())
    part = slice(None, None, 7)
    assert np.array_equal(split.mask("test/test", idx[part]), test[part])
    held = split.sample("heldout", 2_000, 0)
    assert paper_test_mask(family, condition, _values(family, held)).all()


def _values(family: str, idx: np.ndarray) -> np.ndarray:
    return np.stack([VALUES[family][k][idx[:, k]] for k in range(idx.shape[1])], 1)


def test_horz_gt20_leaves_index_20_out_of_both_sets(datasets) -> None:
    split = get_split("montero2022_horz_gt20", datasets["mpi3d"])
    assert set(np.unique(split.sample("encoder", 20_000, 0)[:, 5])) == set(range(20))
    assert set(np.unique(split.sample("heldout", 20_000, 0)[:, 5])) == set(range(21, 40))


MODIFIER_CASES = [
    ("shapes3d", "shape2ohue", "even_ohues", lambda v: np.rint(v[:, 2] * 10) % 2 == 0),
    ("shapes3d", "shape2ohueq", "half_ohues", lambda v: v[:, 2] < 0.5),
    (
        "shapes3d",
        "fhue2whue",
        "even_wnf_hues",
        lambda v: (np.rint(v[:, 0] * 10) % 2 == 0) & (np.rint(v[:, 1] * 10) % 2 == 0),
    ),
    (
        "dsprites",
        "shape2tx",
        "sparse_posX",
        lambda v: np.isin(np.rint(v[:, 3] * 31), [0, 7, 15, 23, 31]),
    ),
    (
        "dsprites",
        "loo",
        "sparse_posY",
        lambda v: np.isin(np.rint(v[:, 4] * 31), [0, 7, 15, 23, 31]),
    ),
    ("mpi3d", "cyl2horz", "four_shapes", lambda v: ~np.isin(v[:, 1], [0, 3])),
    ("mpi3d", "objc_gt3", "even_vx", lambda v: v[:, 6] % 2 == 1),
    ("mpi3d", "objc_gt3", "lhalf_hx", lambda v: v[:, 5] < 20),
]


def test_every_modifier_is_tested() -> None:
    tested = {case[2] for case in MODIFIER_CASES} | {"fix_hx"}  # fix_hx: from a spec, below
    assert tested == {m for mods in MODIFIERS.values() for m in mods}


@pytest.mark.parametrize(("family", "condition", "modifier", "keep"), MODIFIER_CASES)
def test_modifiers_thin_both_sets(datasets, grids, family, condition, modifier, keep) -> None:
    ds, (idx, values) = datasets[family], grids[family]
    split = get_split(f"montero2022_{condition}", ds, {"modifiers": [modifier]})
    kept = keep(values)
    assert 0 < kept.mean() < 1
    test = paper_test_mask(family, condition, values) & kept
    assert np.array_equal(split.mask("heldout", idx), test)
    assert np.array_equal(
        split.mask("encoder", idx), paper_train_mask(family, condition, values) & kept
    )
    assert test.any()


def test_shape2ohue_with_even_hues_holds_out_two_hues() -> None:
    # The paper's supervised control: capsules at hues 0.6 and 0.8 only.
    split = get_split(
        "montero2022_shape2ohue", get_dataset("shapes3d"), {"modifiers": ["even_ohues"]}
    )
    held = split.sample("heldout", 5_000, 0)
    assert set(np.unique(held[:, 2])) == {6, 8} and set(np.unique(held[:, 4])) == {3}
    assert math.isclose(split.mask("heldout", held).mean(), 1.0)


def test_modifiers_from_a_spec(datasets) -> None:
    split = split_from_config(
        {"name": "montero2022_cyl2horz", "options": {"modifiers": ["four_shapes", "fix_hx"]}},
        datasets["mpi3d"],
    )
    held = split.sample("heldout", 1_000, 0)
    assert set(np.unique(held[:, 5])) == {0} and set(np.unique(held[:, 1])) == {2}


@pytest.mark.parametrize(
    ("name", "family", "options", "words"),
    [
        ("montero2022_shape2ohue", "dsprites", None, r"defined on the grids of shapes3d"),
        (
            "montero2022_cyl2horz",
            "mpi3d",
            {"modifiers": ["even_ohues"]},
            r"unknown modifier 'even_ohues' for the mpi3d grid; allowed: four_shapes",
        ),
        ("montero2022_cyl2horz", "mpi3d", {"modifiers": "fix_hx"}, r"must be a list"),
        (
            "montero2022_horz_gt20",
            "mpi3d",
            {"modifiers": ["fix_hx"]},
            r"modifiers \['fix_hx'\] leave a set empty: .*selects nothing",
        ),
        ("montero2022_loo", "mpi3d", {"seed": 1}, r"no option 'seed'; allowed: modifiers"),
    ],
)
def test_bad_uses_are_named(datasets, name, family, options, words) -> None:
    with pytest.raises((ValueError, SelectorError, SplitOptionError), match=words):
        get_split(name, datasets[family], options)


def test_needs_the_official_grid() -> None:
    with pytest.raises(ValueError, match=r"'montero2022_loo' is written for the official dsprites"):
        get_split("montero2022_loo", get_dataset("dsprites", orientation_bins=10))


@pytest.mark.parametrize(
    ("kind", "family", "condition"),
    [(k, f, c) for k, fams in KINDS.items() for f, c in fams.items() if f in VALUES],
)
def test_kinds_pick_the_papers_variant_per_dataset(datasets, grids, kind, family, condition):
    ds, (idx, values) = datasets[family], grids[family]
    split = get_split(f"montero2022_{kind}", ds)
    assert split.name == f"montero2022_{condition}"
    assert np.array_equal(
        split.mask("heldout", idx[::3]), paper_test_mask(family, condition, values[::3])
    )


def test_kinds_on_other_grids_are_refused() -> None:
    with pytest.raises(
        ValueError, match=r"'montero2022_extrp' is defined on the grids of dsprites"
    ):
        get_split("montero2022_extrp", get_dataset("circles"))
