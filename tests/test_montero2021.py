"""Montero et al. (ICLR 2021): every condition of the paper's code as a split, its nets, its
study file.

The held-out and training sets are checked against the authors' filters
(mmrl/disent-and-gen, ``scripts/configs/datasplits.py``), re-stated here on the factor values
the official files hold (as the authors' loaders list them in ``src/dataset/sprites.py`` and
``shapes3d.py``), never through raystudy's index tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from raystudy.checks import load_spec
from raystudy.data import GroundTruthDataset, get_dataset, get_split
from raystudy.models.architectures import ARCHITECTURES

ROOT = Path(__file__).resolve().parents[1]

# latents_values of the dSprites npz (colour column dropped, as the authors' load_raw does):
# shape 1 square, 2 ellipse, 3 heart; scale; orientation in radians; positions.
DSPRITES_VALUES = [
    np.array([1.0, 2.0, 3.0]),
    np.linspace(0.5, 1.0, 6),
    np.linspace(0.0, 2 * np.pi, 40),
    np.linspace(0.0, 1.0, 32),
    np.linspace(0.0, 1.0, 32),
]
# labels of 3dshapes.h5: floor, wall, object hue; scale; shape 0..3; orientation in degrees.
SHAPES3D_VALUES = [
    np.arange(10) / 10,
    np.arange(10) / 10,
    np.arange(10) / 10,
    np.linspace(0.75, 1.25, 8),
    np.array([0.0, 1.0, 2.0, 3.0]),
    np.linspace(-30.0, 30.0, 15),
]

# (values, classes) -> mask, one pair (train, test) per condition, as datasplits.py writes
# them (Dsprites: shp, scl, rot, tx, ty = 0..4; Shapes3D: fh, wh, oh, scl, shp, rot = 0..5).
Rule = Callable[[np.ndarray, np.ndarray], np.ndarray]
A90, A120, A180, A240 = np.pi / 2, 4 * np.pi / 3, np.pi, 2 * np.pi / 3  # the code's names


def dsprites_leave1out(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (
        (c[:, 0] == 1)
        & (v[:, 1] > 0.6)
        & (v[:, 2] > 0.0)
        & (v[:, 2] < A120)
        & (v[:, 2] > A240)
        & (v[:, 3] > 0.66)
        & (v[:, 4] > 0.66)
    )


def shapes3d_leave1out(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (
        (v[:, 2] >= 0.8)
        & (v[:, 1] >= 0.8)
        & (v[:, 0] >= 0.8)
        & (v[:, 3] >= 1.1)
        & (v[:, 4] == 1)
        & (v[:, 5] > 20)
    )


def complement(test: Rule) -> tuple[Rule, Rule]:
    return (lambda v, c: ~test(v, c)), test


def blank_side(ratio: float) -> tuple[Rule, Rule]:
    return (lambda v, c: v[:, 3] < ratio), (lambda v, c: v[:, 3] > ratio)


RULES: dict[tuple[str, str], tuple[Rule, Rule]] = {
    ("dsprites", "leave1out"): complement(dsprites_leave1out),
    ("dsprites", "shape2tx"): (
        lambda v, c: (v[:, 0] != 1) | (v[:, 3] < 0.5),
        lambda v, c: (v[:, 0] == 1) & (v[:, 3] > 0.5),
    ),
    # The paper's text (Sec. 2.1): [shape=square, scale>0.5] and [shape=square, rotation>90°].
    ("dsprites", "shape2scale"): complement(lambda v, c: (v[:, 0] == 1) & (v[:, 1] > 0.5)),
    ("dsprites", "shape2rot"): complement(lambda v, c: (v[:, 0] == 1) & (v[:, 2] > A90)),
    ("dsprites", "blank_side"): blank_side(0.5),
    ("dsprites", "blank_side_16"): blank_side(0.16),
    ("dsprites", "blank_side_25"): blank_side(0.25),
    ("dsprites", "blank_side_75"): blank_side(0.75),
    ("shapes3d", "leave1out"): complement(shapes3d_leave1out),
    ("shapes3d", "fhue_gt50"): (
        lambda v, c: v[:, 0] < 0.5,
        lambda v, c: ~(v[:, 0] < 0.5),
    ),
    ("shapes3d", "ohue_whue2fhue"): complement(lambda v, c: (v[:, 2] >= 0.8) & (v[:, 1] <= 0.2)),
    ("shapes3d", "shape2fhue"): complement(lambda v, c: (v[:, 4] == 3.0) & (v[:, 0] >= 0.5)),
    ("shapes3d", "shape2ohue"): complement(lambda v, c: (v[:, 4] == 3.0) & (v[:, 2] >= 0.5)),
}
SHIFTED = {"blank_side": "pos_x", "fhue_gt50": "floor_hue"}


@pytest.fixture(scope="module")
def datasets() -> dict[str, GroundTruthDataset]:
    return {
        "dsprites": get_dataset("dsprites", orientation_grid="closed"),
        "shapes3d": get_dataset("shapes3d"),
    }


@pytest.fixture(scope="module")
def grids(datasets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every combination of each grid as (class indices, the files' values)."""
    out = {}
    for family, values in (("dsprites", DSPRITES_VALUES), ("shapes3d", SHAPES3D_VALUES)):
        sizes = [len(v) for v in values]
        assert sizes == list(datasets[family].factors.sizes)
        classes = np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1)
        classes = classes.reshape(-1, len(sizes))
        vals = np.stack([values[k][classes[:, k]] for k in range(len(sizes))], axis=1)
        out[family] = (classes, vals)
    return out


@pytest.mark.parametrize(("family", "variant"), list(RULES), ids="-".join)
def test_each_condition_holds_out_what_the_authors_filter_does(
    datasets, grids, family, variant
) -> None:
    classes, values = grids[family]
    train_rule, test_rule = RULES[(family, variant)]
    heldout, train = test_rule(values, classes), train_rule(values, classes)
    split = get_split(f"montero2021_{variant}", datasets[family])
    assert 0 < heldout.sum() < len(heldout)
    assert np.array_equal(split.mask("heldout", classes), heldout)
    assert np.array_equal(split.mask("encoder", classes), train)
    # Probes fit on the training set and are scored on the held-out one.
    assert np.array_equal(split.mask("test/test", classes), heldout)
    assert np.array_equal(split.mask("test/train", classes), train)
    drawn = split.sample("heldout", 2_000, 0)
    assert test_rule(values[_rows(classes, drawn)], drawn).all()
    shifted = next((f for key, f in SHIFTED.items() if variant.startswith(key)), None)
    assert split.scenarios["test"].ood_factors == ((shifted,) if shifted else ())


def _rows(grid: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Row of each combination of `indices` in the row-major `grid`."""
    return np.ravel_multi_index(tuple(indices.T), tuple(grid.max(axis=0) + 1))


@pytest.mark.parametrize(
    ("kind", "variants"),
    [
        ("element", {"dsprites": "leave1out", "shapes3d": "leave1out"}),
        ("range", {"dsprites": "shape2tx", "shapes3d": "shape2ohue"}),
        ("extrapolation", {"dsprites": "blank_side", "shapes3d": "fhue_gt50"}),
    ],
)
def test_the_kind_splits_are_the_variants_of_the_papers_figures(
    datasets, grids, kind, variants
) -> None:
    # scripts/analysis/conditions.yaml: the variant each dataset's figure shows.
    for family, variant in variants.items():
        classes, values = grids[family]
        train_rule, test_rule = RULES[(family, variant)]
        split = get_split(f"montero_{kind}", datasets[family])
        assert np.array_equal(split.mask("heldout", classes), test_rule(values, classes))
        assert np.array_equal(split.mask("encoder", classes), train_rule(values, classes))


def test_a_condition_on_the_other_grid_is_refused(datasets) -> None:
    with pytest.raises(ValueError, match=r"'montero2021_shape2tx' is defined on the grids of"):
        get_split("montero2021_shape2tx", datasets["shapes3d"])
    with pytest.raises(ValueError, match=r"'montero2021_fhue_gt50' is defined on the grids of"):
        get_split("montero2021_fhue_gt50", datasets["dsprites"])
    with pytest.raises(ValueError, match=r"official dsprites grid"):
        get_split("montero2021_blank_side_25", get_dataset("dsprites", orientation_bins=10))


# --- the nets of their cnnvae.py --------------------------------------------------------------

# Their layer lists (scripts/configs/cnnvae.py), and each decoder written out as their
# transpose_layer_defs makes it: the FC sizes reversed, then the convs' channels reversed.
CNNVAE = {
    "burgess": {
        "encoder": [32, 32, 32, 32, 256, 256],
        "decoder_fc": [256, 256, 512],
        "decoder_tconv": [(32, 32), (32, 32), (32, 32), (32, "C")],
    },
    "burgess_v2": {
        "encoder": [32, 32, 64, 64, 256, 256],
        "decoder_fc": [256, 256, 1024],
        "decoder_tconv": [(64, 64), (64, 32), (32, 32), (32, "C")],
    },
    "kim": {
        "encoder": [32, 32, 64, 64, 256],
        "decoder_fc": [256, 1024],
        "decoder_tconv": [(64, 64), (64, 32), (32, 32), (32, "C")],
    },
}


def _layers(module: nn.Module, kind: type) -> list[nn.Module]:
    return [m for m in module.modules() if isinstance(m, kind)]


@pytest.mark.parametrize("name", list(CNNVAE))
@pytest.mark.parametrize("channels", [1, 3])
def test_the_authors_nets_are_built_layer_for_layer(name: str, channels: int) -> None:
    torch.manual_seed(0)
    encoder, decoder = ARCHITECTURES.get(name)(channels, 10, 64, 10)
    spec = CNNVAE[name]
    convs = _layers(encoder, nn.Conv2d)
    assert [c.out_channels for c in convs] == spec["encoder"][:4]
    assert all(c.kernel_size == (4, 4) and c.stride == (2, 2) for c in convs)
    assert all(c.padding == (1, 1) for c in convs)
    linears = _layers(encoder, nn.Linear)
    assert [lin.out_features for lin in linears] == [*spec["encoder"][4:], 20]
    assert linears[0].in_features == spec["encoder"][3] * 16
    assert [lin.out_features for lin in _layers(decoder, nn.Linear)] == spec["decoder_fc"]
    assert _layers(decoder, nn.Linear)[0].in_features == 10
    tconvs = _layers(decoder, nn.ConvTranspose2d)
    expected = [(i, channels if o == "C" else o) for i, o in spec["decoder_tconv"]]
    assert [(t.in_channels, t.out_channels) for t in tconvs] == expected
    x = torch.rand(5, channels, 64, 64)
    mean, logvar = encoder(x)
    assert mean.shape == logvar.shape == (5, 10)
    assert decoder(mean).shape == (5, channels, 64, 64)
    # One linear layer gives both: its first half of outputs is the mean, the rest log-variance.
    both = linears[-1](encoder.features(x))
    assert torch.equal(both[:, :10], mean) and torch.equal(both[:, 10:], logvar)
    # The last layer of each side is linear (no ReLU after the logits or the posterior).
    assert not isinstance(list(decoder.modules())[-1], nn.ReLU)


@pytest.mark.parametrize("name", list(CNNVAE))
def test_the_authors_nets_start_from_their_kaiming_uniform(name: str) -> None:
    # weights_init: kaiming_uniform_(nonlinearity="relu"), bound sqrt(6 / fan_in); PyTorch's
    # default for these layers has bound 1 / sqrt(fan_in), which the largest weight of a
    # layer this size exceeds only under the authors' init.
    torch.manual_seed(0)
    for module in ARCHITECTURES.get(name)(1, 10, 64, 10):
        for layer in _layers(module, nn.Linear | nn.Conv2d | nn.ConvTranspose2d):
            w = layer.weight.detach()
            fan_in = w[0].numel() if not isinstance(layer, nn.ConvTranspose2d) else None
            if fan_in is None:  # a transposed conv's weight is [in, out, k, k]
                fan_in = w.shape[1] * w.shape[2] * w.shape[3]
            bound = (6 / fan_in) ** 0.5
            assert w.abs().max() <= bound
            assert w.abs().max() > 1.5 / fan_in**0.5


def test_the_authors_nets_are_64_pixels_only() -> None:
    with pytest.raises(ValueError, match="64x64"):
        ARCHITECTURES.get("kim")(1, 10, 32, 10)


# --- the study file -------------------------------------------------------------------------


def test_the_study_crosses_both_datasets_with_the_three_conditions() -> None:
    spec = load_spec(ROOT / "search_spaces" / "montero2021.yaml")
    points = spec.trials()
    datasets = {p.dataset.name for p in points}
    assert datasets == {"dsprites", "shapes3d"}
    for name in datasets:
        splits = {p.split for p in points if p.dataset.name == name}
        assert splits == {"montero_element", "montero_range", "montero_extrapolation"}
    nets = {(p.model.objective, p.model.architecture) for p in points}
    assert nets == {("beta_vae", "burgess_v2"), ("factor_vae", "kim"), ("gt_decoder", "mlp")}
