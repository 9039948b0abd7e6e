"""The procedural MPI3D renderer: the official grid, what each factor does to the image, its
two domains, and the paper splits on it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from raystudy.data import FactorSpace, get_dataset, get_split
from raystudy.data.core.families import FAMILIES
from raystudy.data.core.grids import mpi3d_factors
from raystudy.data.core.registry import DatasetOptionError
from raystudy.data.sources.files.mpi3d_file import MPI3DFile

RES = 64
COLOR, SHAPE, SIZE, CAMERA, BACKGROUND, HORIZONTAL, VERTICAL = range(7)
RED, BLUE = 2, 3
SPLITS = [
    "montero_element",
    "montero_range",
    "montero_extrapolation",
    "schott_random",
    "schott_composition",
    "schott_interpolation",
    "schott_extrapolation",
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Small batches: a second thread only adds contention on a busy machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ds():
    return get_dataset("mpi3d")


def scene(n: int = 1, **factors: object) -> np.ndarray:
    """Index rows of a default scene (large red cube, center camera, purple) with overrides."""
    base = {"color": RED, "shape": 1, "size": 1, "camera": 1, "bg": 0, "h": 20, "v": 20}
    base.update(factors)
    cols = [np.broadcast_to(np.asarray(base[k]), (n,)) for k in base]
    return np.stack(cols, axis=1).astype(np.int64)


def object_mask(ds, idx: np.ndarray) -> np.ndarray:
    """The object's pixels: where a red and a blue object (all else equal) differ."""
    red, blue = idx.copy(), idx.copy()
    red[:, COLOR], blue[:, COLOR] = RED, BLUE
    return ((ds.render(red) - ds.render(blue)).abs().sum(dim=1) > 0.3).numpy()


def centroids(mask: np.ndarray) -> np.ndarray:
    """``[B, 2]`` (column, row) centre of each mask."""
    rows, cols = np.meshgrid(np.arange(RES), np.arange(RES), indexing="ij")
    area = mask.sum(axis=(1, 2))
    assert area.min() > 0
    return np.stack([(mask * cols).sum((1, 2)) / area, (mask * rows).sum((1, 2)) / area], 1)


def test_factor_grid_is_the_official_one_and_mpi3d_files(ds) -> None:
    names = ["object_color", "object_shape", "object_size", "camera_height"]
    names += ["background_color", "horizontal_axis", "vertical_axis"]
    assert ds.factors.names == names == list(FAMILIES["mpi3d"])
    assert ds.factors.sizes == [6, 6, 2, 3, 3, 40, 40]
    assert ds.factors.total == 1_036_800
    # Names, sizes, order and values exactly as the file-backed dataset's.
    assert ds.factors == FactorSpace(mpi3d_factors()) == MPI3DFile.official_factors()
    assert ds.channels == 3 and ds.domains == ("sim", "real", "photo")


def test_output_contract_and_determinism(ds) -> None:
    idx = ds.factors.sample(40, np.random.default_rng(0))
    for domain in ds.domains:
        x = ds.render(idx, domain=domain)
        assert x.shape == (40, 3, RES, RES) and x.dtype == torch.float32
        assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
        # A function of the indices alone: a fresh instance, another batch, another order.
        assert torch.equal(x, get_dataset("mpi3d").render(idx, domain=domain))
        singles = torch.cat([ds.render(idx[i : i + 1], domain=domain) for i in range(6)])
        assert torch.allclose(x[:6], singles, atol=1e-6)
        perm = np.random.default_rng(1).permutation(40)
        assert torch.allclose(ds.render(idx[perm], domain=domain), x[perm], atol=1e-6)
    # Lazily: the last combination of the grid renders without anything grid-sized.
    last = np.array([[s - 1 for s in ds.factors.sizes]])
    assert ds.render(last).shape == (1, 3, RES, RES)


@pytest.mark.parametrize("factor", range(7))
def test_every_value_of_every_factor_draws_another_image(ds, factor: int) -> None:
    # From a few random scenes, each value of the factor (the rest fixed) is its own image:
    # every two values differ clearly (summed absolute difference over the pixels).
    n = ds.factors.sizes[factor]
    for base in ds.factors.sample(3, np.random.default_rng(factor)):
        idx = np.repeat(base[None], n, axis=0)
        idx[:, factor] = np.arange(n)
        x = ds.render(idx).flatten(1)
        gap = torch.cdist(x, x, p=1.0)
        gap.fill_diagonal_(np.inf)
        assert float(gap.min()) > 1.0, ds.factors.names[factor]


def test_object_takes_its_colour(ds) -> None:
    idx = scene(6, color=np.arange(6), bg=1)
    x = ds.render(idx)
    mask = object_mask(ds, idx)
    # Inside the object (away from its anti-aliased edge) a pixel is the colour times a
    # shade: its channel ratios are the colour's.
    inner = mask.copy()
    inner[:, 1:-1, 1:-1] &= mask[:, :-2, 1:-1] & mask[:, 2:, 1:-1]
    inner[:, 1:-1, 1:-1] &= mask[:, 1:-1, :-2] & mask[:, 1:-1, 2:]
    expected = np.array(
        [
            [0.95, 0.95, 0.93],  # white
            [0.15, 0.62, 0.22],  # green
            [0.86, 0.13, 0.10],  # red
            [0.13, 0.28, 0.86],  # blue
            [0.52, 0.31, 0.15],  # brown
            [0.52, 0.53, 0.12],  # olive
        ]
    )
    for k in range(6):
        pixels = x[k].permute(1, 2, 0).numpy()[inner[k]]
        assert len(pixels) > 20
        top = pixels[pixels.sum(axis=1).argmax()]
        assert np.allclose(top / top.max(), expected[k] / expected[k].max(), atol=0.02)


def test_horizontal_moves_the_object_across_and_vertical_moves_it_up(ds) -> None:
    for camera in range(3):
        across = centroids(object_mask(ds, scene(40, h=np.arange(40), camera=camera)))
        assert np.all(np.diff(across[:, 0]) > 0)  # left to right
        assert across[-1, 0] - across[0, 0] > 0.45 * RES
        up = centroids(object_mask(ds, scene(40, v=np.arange(40), camera=camera)))
        assert np.all(np.diff(up[:, 1]) < 0)  # rows decrease: upwards
        assert up[0, 1] - up[-1, 1] > 0.25 * RES


def test_large_objects_are_larger(ds) -> None:
    for shape in range(6):
        area = object_mask(ds, scene(2, shape=shape, size=[0, 1])).sum(axis=(1, 2))
        assert area[1] > 1.7 * area[0]  # 1.45^2 = 2.1 in area


def test_the_six_shapes_have_their_own_silhouettes(ds) -> None:
    for camera in range(3):
        masks = object_mask(ds, scene(6, shape=np.arange(6), camera=camera))
        for i in range(6):
            for j in range(i + 1, 6):
                assert (masks[i] ^ masks[j]).sum() >= 8, f"shapes {i}, {j}, camera {camera}"


def test_background_colour_and_camera_height_change_the_backdrop(ds) -> None:
    idx = scene(9, bg=np.repeat(np.arange(3), 3), camera=np.tile(np.arange(3), 3))
    x = ds.render(idx).numpy()
    corner = x[:, :, 1, 1]  # wall, away from the arm
    assert np.all(np.linalg.norm(corner[[0, 3, 6]] - corner[[3, 6, 0]], axis=1) > 0.2)
    # The floor's far edge: lower in the image from a lower camera.
    column = x[:, :, :, 2].sum(axis=1)  # [9, H]
    edge = np.argmax(np.abs(np.diff(column, axis=1)) > 0.1, axis=1)
    assert np.all(np.diff(edge.reshape(3, 3), axis=1) > 3)


def test_objects_stay_in_the_frame_and_in_their_window() -> None:
    ds = get_dataset("mpi3d")
    # The same scenes drawn with a window as large as the image: identical.
    whole = get_dataset("mpi3d")
    tables = whole._device_tables(torch.device("cpu"))
    whole._tables[torch.device("cpu")] = dataclasses.replace(
        tables, window=RES, steps=torch.arange(RES, dtype=torch.float32)
    )
    extremes = [0, 39]
    idx = np.array(
        [
            [RED, s, 1, c, 0, h, v]
            for s in range(6)
            for c in range(3)
            for h in extremes
            for v in extremes
        ]
    )
    assert torch.equal(ds.render(idx), whole.render(idx))
    sample = ds.factors.sample(256, np.random.default_rng(3))
    assert torch.equal(ds.render(sample), whole.render(sample))
    mask = object_mask(ds, idx)
    border = mask[:, [0, -1], :].any(axis=(1, 2)) | mask[:, :, [0, -1]].any(axis=(1, 2))
    assert not border.any()


def test_real_domain_is_the_same_scene_through_another_camera(ds) -> None:
    idx = ds.factors.sample(24, np.random.default_rng(4))
    sim, real = ds.render(idx), ds.render(idx, domain="real")
    assert (sim - real).abs().mean() > 0.03
    other = get_dataset("mpi3d", real_seed=7)
    assert other.factors == ds.factors
    assert torch.equal(other.render(idx), sim)
    assert (other.render(idx, domain="real") - real).abs().mean() > 0.01


def test_128_pixels_draw_the_same_scene(ds) -> None:
    idx = ds.factors.sample(16, np.random.default_rng(5))
    fine = get_dataset("mpi3d", resolution=128).render(idx)
    assert fine.shape == (16, 3, 128, 128)
    pooled = torch.nn.functional.avg_pool2d(fine, 2)
    assert (pooled - ds.render(idx)).abs().mean() < 0.01


@pytest.mark.parametrize("name", SPLITS)
def test_paper_splits_take_mpi3d(ds, name: str) -> None:
    split = get_split(name, ds)
    train = split.sample("encoder", 20_000, 0)
    held = split.sample("heldout", 2_000, 1)
    assert len(held) == 2_000 and not split.mask("heldout", train).any()
    assert not split.mask("encoder", held).any()
    assert ds.render(held[:4]).shape == (4, 3, RES, RES)


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"resolution": 8}, ValueError, "resolution must be in 16..1024 pixels, got 8"),
        ({"resolution": "big"}, DatasetOptionError, "option 'resolution' must be an integer"),
        ({"real_seed": -1}, DatasetOptionError, "real_seed must be in 0..4294967295, got -1"),
        ({"colour": 1}, DatasetOptionError, "unknown option 'colour'"),
    ],
)
def test_bad_options_are_named(options: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        get_dataset("mpi3d", **options)
