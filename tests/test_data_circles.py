"""The procedural ``circles`` and ``simple`` datasets (Montero et al. 2022's Spriteworld sets):
their grids, determinism, what each factor does to the image, and their paper splits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.data.sources.procedural.circles import POSITIONS, RADIUS

RES = 64


@pytest.fixture(scope="module")
def circles():
    return get_dataset("circles")


@pytest.fixture(scope="module")
def simple():
    return get_dataset("simple")


def grid(sizes: list[int]) -> np.ndarray:
    return np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1).reshape(-1, len(sizes))


def centroid(images: torch.Tensor) -> torch.Tensor:
    """(x, y) centre of mass of each [B, 1, R, R] image in [0, 1] image coordinates."""
    mass = images[:, 0].sum(dim=(1, 2))
    centres = (torch.arange(RES, dtype=torch.float32) + 0.5) / RES
    x = (images[:, 0].sum(dim=1) * centres).sum(dim=1) / mass
    y = (images[:, 0].sum(dim=2) * centres).sum(dim=1) / mass
    return torch.stack([x, y], 1)


def test_factor_grids(circles, simple) -> None:
    assert circles.factors.names == ["pos_x", "pos_y"] and circles.factors.sizes == [32, 32]
    assert simple.factors.names == ["pos_x", "pos_y", "shape"]
    assert simple.factors.sizes == [32, 32, 2]
    assert circles.domains == simple.domains == ("sim", "real", "photo")
    for ds in (circles, simple):
        images = ds.render(grid(ds.factors.sizes))
        assert images.shape == (ds.factors.total, 1, RES, RES) and images.dtype == torch.float32
        assert images.min() >= 0.0 and images.max() <= 1.0
        # Every combination is a distinct image: the factors are identifiable from pixels.
        flat = images.flatten(1)
        assert torch.unique(flat, dim=0).shape[0] == ds.factors.total


def test_same_indices_same_images_in_both_domains(simple) -> None:
    idx = simple.factors.sample(8, np.random.default_rng(0))
    for domain in ("sim", "real"):
        a = simple.render(idx, domain=domain)
        b = get_dataset("simple").render(torch.as_tensor(idx), domain=domain)
        assert torch.equal(a, b)
    assert (simple.render(idx, domain="real") - simple.render(idx)).abs().mean() > 0.01
    # A batch renders as its items do one by one.
    one = torch.cat([simple.render(idx[i : i + 1]) for i in range(4)])
    assert torch.equal(one, simple.render(idx[:4]))


@pytest.mark.parametrize("shape", [0, 1])
def test_the_sprite_sits_at_its_position(simple, shape: int) -> None:
    idx = np.array([[i, j, shape] for i in (0, 9, 31) for j in (0, 20, 31)])
    got = centroid(simple.render(idx))
    want = torch.tensor([[POSITIONS[i], POSITIONS[j]] for i, j, _ in idx], dtype=torch.float32)
    assert torch.allclose(got, want, atol=0.5 / RES)


def test_each_factor_changes_the_image(simple) -> None:
    base = np.array([[12, 20, 0]])
    image = simple.render(base)
    for k in range(3):
        moved = base.copy()
        moved[0, k] = (moved[0, k] + 1) % simple.factors.sizes[k]
        assert (simple.render(moved) - image).abs().sum() > 1.0


def test_disc_and_square_have_the_area_of_a_disc_of_radius_0_08(circles, simple) -> None:
    area = math.pi * RADIUS**2 * RES**2
    disc = circles.render(np.array([[16, 16]])).sum()
    shapes = simple.render(np.array([[16, 16, 0], [16, 16, 1]])).sum(dim=(1, 2, 3))
    assert disc.item() == pytest.approx(area, rel=0.02)
    assert torch.allclose(shapes, torch.full((2,), area), rtol=0.02)
    assert torch.equal(simple.render(np.array([[16, 16, 0]])), circles.render(np.array([[16, 16]])))
    # Near the square's corner (0.066 off the centre on both axes, 0.093 from it) the square
    # covers the pixel and the disc, of radius 0.08, does not.
    sq, dc = simple.render(np.array([[16, 16, 1], [16, 16, 0]]))[:, 0]
    corner = int((POSITIONS[16] - 0.066) * RES)
    assert sq[corner, corner] > 0.5 and dc[corner, corner] == 0.0


@pytest.mark.parametrize(
    ("name", "dataset", "count"),
    [
        ("montero2022_midpos", "circles", 12 * 12),
        ("montero2022_midpos", "simple", 12 * 12),
        ("montero2022_shape2px", "circles", 16 * 16),
        ("montero2022_shape2px", "simple", 16 * 16),
    ],
)
def test_paper_splits_hold_out_the_papers_regions(name, dataset, count) -> None:
    ds = get_dataset(dataset)
    idx = grid(ds.factors.sizes)
    px, py = np.asarray(POSITIONS)[idx[:, 0]], np.asarray(POSITIONS)[idx[:, 1]]
    # The paper's masks, in values (datasplits.py, _Circles and _Simple).
    if name.endswith("midpos"):
        test = (px >= 0.35) & (px <= 0.65) & (py >= 0.35) & (py <= 0.65)
    else:
        test = (px > 0.5) & (py > 0.5)
    if dataset == "simple":
        test &= idx[:, 2] == 1
    split = get_split(name, ds)
    assert test.sum() == count
    assert np.array_equal(split.mask("heldout", idx), test)
    assert np.array_equal(split.mask("encoder", idx), ~test)
    split.check_nonempty()
