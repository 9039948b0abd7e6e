"""The further conditions of Montero et al. (2022)'s code
(raystudy.data.splits.papers.montero2022_variants): each held-out and training set is compared, over
the whole official grid, with the code's rule re-stated here on factor VALUES
(``mmrl/lost-in-latent-space``,
``scripts/configs/datasplits.py``), independently of the module's index translation, and its
size is counted by hand."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from raystudy.data import GroundTruthDataset, get_dataset, get_split
from raystudy.data.splits.papers.montero2022 import ALL_CONDITIONS, CONDITIONS
from raystudy.data.splits.papers.montero2022_variants import VARIANTS

# The official factor values (the datasets' documentation; the code's tables).
HUES = np.arange(10) / 10
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

Rule = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dsprites(rule: Callable[..., np.ndarray]) -> Rule:
    return lambda v, c: rule(*v.T)


# (train mask, test mask) as the code writes each, on values v and classes c.
def rules(family: str, condition: str) -> tuple[Rule, Rule]:
    if family == "dsprites":
        table: dict[str, tuple[Rule, Rule]] = {
            "ell2tx": (
                _dsprites(lambda shp, scl, rot, tx, ty: (shp != 2) | (tx < 0.5)),
                _dsprites(lambda shp, scl, rot, tx, ty: (shp == 2) & (tx > 0.5)),
            ),
            "sqr2scl": (
                _dsprites(lambda shp, scl, rot, tx, ty: (shp != 1) | (scl < 0.75)),
                _dsprites(lambda shp, scl, rot, tx, ty: (shp == 1) & (scl > 0.75)),
            ),
            "sqr2tx_cent": _complement(
                _dsprites(lambda shp, scl, rot, tx, ty: (shp == 1) & (tx > 0.25) & (tx < 0.75))
            ),
            "sqr2tx_flnk": _train_first(
                _dsprites(lambda shp, scl, rot, tx, ty: (shp != 1) | (tx < 0.25) | (tx > 0.75))
            ),
            "sqr2tx_rs": _complement(
                _dsprites(lambda shp, scl, rot, tx, ty: (shp == 1) & (tx > 0.40) & (tx < 0.90))
            ),
            "sqr2tx_ls": _train_first(
                _dsprites(lambda shp, scl, rot, tx, ty: (shp != 2) | ((tx > 0.10) & (tx < 0.60)))
            ),
        }
        return table[condition]
    if family == "shapes3d":
        fh, wh, oh, _scl, shp, orient = range(6)
        table = {
            "odd_ohue": (
                lambda v, c: c[:, oh] % 2 == 0,
                lambda v, c: c[:, oh] % 2 == 1,
            ),
            "odd_wnf_hue": _train_first(lambda v, c: ((c[:, wh] % 2) == 0) & ((c[:, fh] % 2) == 0)),
            "shape2ohue_r2e": _complement(lambda v, c: (c[:, shp] == 3.0) & (c[:, oh] == 2)),
            "shape2fhue": _complement(lambda v, c: (v[:, shp] == 3.0) & (v[:, fh] >= 0.5)),
            "shape2orient": _complement(lambda v, c: (c[:, shp] == 3.0) & (v[:, orient] >= 0)),
            "shape2ohue_flnk": _complement(
                lambda v, c: (v[:, shp] == 3.0) & (v[:, oh] > 0.25) & (v[:, oh] < 0.75)
            ),
        }
        return table[condition]
    _oc, shape, _sz, _camh, bkg, _hx, vx = range(7)
    table = {
        "cyl2vx": _complement(lambda v, c: (v[:, vx] < 20) & (v[:, shape] == 2)),
        "bkg2cyl": _complement(lambda v, c: (v[:, shape] >= 4) & (v[:, bkg] == 2)),
    }
    return table[condition]


def _complement(test: Rule) -> tuple[Rule, Rule]:
    return (lambda v, c: ~test(v, c)), test


def _train_first(train: Rule) -> tuple[Rule, Rule]:
    return train, (lambda v, c: ~train(v, c))


# The held-out counts, multiplied out by hand (the grids: dSprites 3x6x40x32x32, 3dshapes
# 10x10x10x8x4x15, MPI3D 6x6x2x3x3x40x40).
COUNTS = {
    ("dsprites", "ell2tx"): 1 * 6 * 40 * 16 * 32,
    ("dsprites", "sqr2scl"): 1 * 3 * 40 * 32 * 32,
    ("dsprites", "sqr2tx_cent"): 1 * 6 * 40 * 16 * 32,
    ("dsprites", "sqr2tx_flnk"): 1 * 6 * 40 * 16 * 32,
    ("dsprites", "sqr2tx_rs"): 1 * 6 * 40 * 15 * 32,
    ("dsprites", "sqr2tx_ls"): 1 * 6 * 40 * (4 + 13) * 32,
    ("shapes3d", "odd_ohue"): 10 * 10 * 5 * 8 * 4 * 15,
    ("shapes3d", "odd_wnf_hue"): (100 - 25) * 10 * 8 * 4 * 15,
    ("shapes3d", "shape2ohue_r2e"): 10 * 10 * 1 * 8 * 1 * 15,
    ("shapes3d", "shape2fhue"): 5 * 10 * 10 * 8 * 1 * 15,
    ("shapes3d", "shape2orient"): 10 * 10 * 10 * 8 * 1 * 8,
    ("shapes3d", "shape2ohue_flnk"): 10 * 10 * 5 * 8 * 1 * 15,
    ("mpi3d", "cyl2vx"): 6 * 1 * 2 * 3 * 3 * 40 * 20,
    ("mpi3d", "bkg2cyl"): 6 * 2 * 2 * 3 * 1 * 40 * 40,
}
#: The factors whose held-out values training never shows: out of the mean probe score.
UNSEEN = {"odd_ohue": ("object_hue",), "odd_wnf_hue": ("floor_hue", "wall_hue")}


@pytest.fixture(scope="module")
def datasets() -> dict[str, GroundTruthDataset]:
    return {
        "dsprites": get_dataset("dsprites", orientation_grid="closed"),
        "shapes3d": get_dataset("shapes3d"),
        "mpi3d": get_dataset("mpi3d"),
    }


@pytest.fixture(scope="module")
def grids(datasets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per family: the full index grid (the code's factor classes) and its factor values."""
    out = {}
    for family, ds in datasets.items():
        sizes = ds.factors.sizes
        idx = np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1)
        idx = idx.reshape(-1, len(sizes))
        values = np.stack([VALUES[family][k][idx[:, k]] for k in range(idx.shape[1])], 1)
        out[family] = (idx, values)
    return out


def test_every_variant_is_tested_and_registered() -> None:
    assert {(f, c) for c, fams in VARIANTS.items() for f in fams} == set(COUNTS)
    # Apart from the figures' conditions: no name of theirs is taken over.
    assert not set(VARIANTS) & set(CONDITIONS)
    assert set(ALL_CONDITIONS) == set(VARIANTS) | set(CONDITIONS)


@pytest.mark.parametrize(("family", "condition"), list(COUNTS))
def test_the_sets_are_the_codes(datasets, grids, family, condition) -> None:
    ds, (idx, values) = datasets[family], grids[family]
    split = get_split(f"montero2022_{condition}", ds)
    train_rule, test_rule = rules(family, condition)
    test, train = test_rule(values, idx), train_rule(values, idx)
    assert test.sum() == COUNTS[(family, condition)]
    assert np.array_equal(split.mask("heldout", idx), test)
    assert np.array_equal(split.mask("encoder", idx), train)
    assert not (train & test).any() and (train | test).all()  # the code's sets partition
    split.check_nonempty()
    scn = split.scenarios["test"]
    assert list(split.scenarios) == ["test"] and scn.r2_variance == "grid"
    assert scn.ood_factors == UNSEEN.get(condition, ())
    drawn = split.sample("heldout", 1_000, 0)
    drawn_values = np.stack([VALUES[family][k][drawn[:, k]] for k in range(drawn.shape[1])], 1)
    assert test_rule(drawn_values, drawn).all()


def test_the_flanked_and_centred_windows_hold_out_the_same_squares(datasets, grids) -> None:
    # The code writes one as a test mask and the other as its training mask's complement; no
    # position lies on 0.25 or 0.75, so on the grid they are one set (pos_x 8..23).
    idx = grids["dsprites"][0][::5]
    cent = get_split("montero2022_sqr2tx_cent", datasets["dsprites"])
    flnk = get_split("montero2022_sqr2tx_flnk", datasets["dsprites"])
    assert np.array_equal(cent.mask("heldout", idx), flnk.mask("heldout", idx))
    held = cent.sample("heldout", 5_000, 1)
    assert set(np.unique(held[:, 3])) == set(range(8, 24)) and set(held[:, 0]) == {0}


def test_the_left_shifted_window_holds_out_ellipses_on_both_sides(datasets) -> None:
    split = get_split("montero2022_sqr2tx_ls", datasets["dsprites"])
    held = split.sample("heldout", 20_000, 0)
    assert set(held[:, 0]) == {1}  # the code's shape value 2: the ellipse
    assert set(np.unique(held[:, 3])) == {*range(4), *range(19, 32)}


def test_sparse_pos_y_thins_both_sets(datasets, grids) -> None:
    idx, values = grids["dsprites"]
    split = get_split("montero2022_ell2tx", datasets["dsprites"], {"modifiers": ["sparse_posY"]})
    train_rule, test_rule = rules("dsprites", "ell2tx")
    kept = np.isin(np.rint(values[:, 4] * 31), [0, 7, 15, 23, 31])
    assert kept.sum() == idx.shape[0] * 5 // 32
    assert np.array_equal(split.mask("heldout", idx), test_rule(values, idx) & kept)
    assert np.array_equal(split.mask("encoder", idx), train_rule(values, idx) & kept)
