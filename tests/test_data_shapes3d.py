"""The procedural 3dshapes renderer: what each factor means in the image."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset

RES = 64
CUBE, CYLINDER, SPHERE, CAPSULE = range(4)
FLOOR, WALL, OBJECT, SCALE, SHAPE, ORIENT = range(6)


@pytest.fixture(scope="module")
def ds():
    return get_dataset("shapes3d")


def scene(n: int = 1, **factors: object) -> np.ndarray:
    """Index rows of a default scene (red floor, green-ish wall, blue object) with overrides."""
    base = {"floor": 0, "wall": 3, "obj": 6, "scale": 7, "shape": CUBE, "orient": 7}
    base.update(factors)
    cols = [np.broadcast_to(np.asarray(base[k]), (n,)) for k in base]
    return np.stack(cols, axis=1).astype(np.int64)


def hue_sat(images: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel HSV hue in [0, 1) and saturation of ``[B, 3, H, W]`` (the hexcone model)."""
    x = images.double().numpy()
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    mx, mn = x.max(axis=1), x.min(axis=1)
    chroma = mx - mn
    safe = np.where(chroma > 0, chroma, 1.0)
    hue = np.where(
        mx == r, ((g - b) / safe) % 6, np.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4)
    )
    sat = np.where(mx > 0, chroma / np.where(mx > 0, mx, 1.0), 0.0)
    return np.where(chroma > 0, hue / 6.0, 0.0), sat


def object_mask(ds, idx: np.ndarray) -> np.ndarray:
    """Pixels of the object's hue (shading changes value, never hue)."""
    hue, sat = hue_sat(ds.render(idx))
    target = np.asarray(ds.factors.factors[OBJECT].values)[idx[:, OBJECT]].reshape(-1, 1, 1)
    gap = np.abs((hue - target + 0.5) % 1.0 - 0.5)
    return (gap < 0.01) & (sat > 0.9)


def test_factor_space_is_the_official_grid(ds) -> None:
    assert ds.factors.names == [
        "floor_hue",
        "wall_hue",
        "object_hue",
        "scale",
        "shape",
        "orientation",
    ]
    assert ds.factors.sizes == [10, 10, 10, 8, 4, 15]
    for k in (FLOOR, WALL, OBJECT):
        assert np.allclose(ds.factors.factors[k].values, np.arange(10) / 10)
    assert np.allclose(ds.factors.factors[SCALE].values, np.linspace(0.75, 1.25, 8))
    assert ds.factors.factors[SHAPE].values == (0.0, 1.0, 2.0, 3.0)
    assert np.allclose(ds.factors.factors[ORIENT].values, np.linspace(-30, 30, 15))
    assert ds.channels == 3 and ds.domains == ("sim", "real", "photo")


def test_output_contract_and_determinism(ds) -> None:
    idx = ds.factors.sample(40, np.random.default_rng(0))
    x = ds.render(idx)
    assert x.shape == (40, 3, RES, RES) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert torch.equal(x, get_dataset("shapes3d").render(idx))
    singles = torch.cat([ds.render(idx[i : i + 1]) for i in range(8)])
    assert torch.allclose(x[:8], singles, atol=1e-6)


@pytest.mark.parametrize(("factor", "row", "col"), [(FLOOR, 62, 3), (WALL, 2, 3)])
def test_floor_and_wall_take_their_hue(ds, factor: int, row: int, col: int) -> None:
    hues = np.arange(10)
    idx = scene(10, **{("floor" if factor == FLOOR else "wall"): hues})
    hue, sat = hue_sat(ds.render(idx))
    got = hue[:, row, col]
    gap = np.abs((got - hues / 10 + 0.5) % 1.0 - 0.5)
    assert gap.max() < 0.005
    assert np.all(sat[:, row, col] > 0.99)


def test_object_takes_its_hue_and_sits_at_the_centre(ds) -> None:
    for h in range(10):
        # Floor and wall hues kept away from the object's, so the mask is the object alone.
        idx = scene(4, obj=h, floor=(h + 3) % 10, wall=(h + 6) % 10, shape=np.arange(4))
        mask = object_mask(ds, idx)
        assert np.all(mask.sum(axis=(1, 2)) > 60)
        cols = np.nonzero(mask.any(axis=1))[1]
        assert abs(cols.mean() - RES / 2) < 1.5


@pytest.mark.parametrize("shape", [CUBE, CYLINDER, SPHERE, CAPSULE])
def test_object_area_grows_as_scale_squared(ds, shape: int) -> None:
    idx = scene(8, shape=shape, scale=np.arange(8))
    areas = object_mask(ds, idx).sum(axis=(1, 2)).astype(float)
    assert np.all(np.diff(areas) > 0)
    scales = np.linspace(0.75, 1.25, 8)
    assert np.allclose(areas / areas[-1], (scales / scales[-1]) ** 2, rtol=0.08)


def test_the_four_shapes_have_their_silhouettes(ds) -> None:
    # At -30 degrees the cube shows two faces; head-on it is a rectangle like the cylinder.
    masks = object_mask(ds, scene(4, shape=np.arange(4), orient=0))
    for i in range(4):
        for j in range(i + 1, 4):
            assert (masks[i] ^ masks[j]).sum() > 40, f"shapes {i} and {j} look alike"

    def box_fill_and_aspect(mask: np.ndarray) -> tuple[float, float]:
        rows, cols = np.nonzero(mask)
        h, w = np.ptp(rows) + 1, np.ptp(cols) + 1
        return mask.sum() / (h * w), h / w

    fill, aspect = zip(*(box_fill_and_aspect(m) for m in masks), strict=True)
    assert fill[SPHERE] == pytest.approx(np.pi / 4, abs=0.06)  # a disc in its square
    assert aspect[SPHERE] == pytest.approx(1.0, abs=0.1)
    assert aspect[CAPSULE] > 1.5  # standing upright
    assert fill[CYLINDER] > 0.85 and fill[CUBE] > 0.8  # nearly fill their boxes


def test_head_on_cube_and_cylinder_differ_in_shading(ds) -> None:
    idx = scene(2, shape=[CUBE, CYLINDER], orient=7)
    value = ds.render(idx).amax(dim=1).numpy()
    masks = object_mask(ds, idx)
    row = int(np.nonzero(masks[0].any(axis=1))[0].mean()) + 4  # the side, below the top face
    spread = [np.ptp(value[k, row][masks[k, row]][2:-2]) for k in range(2)]
    assert spread[0] < 0.02  # one flat face
    assert spread[1] > 0.2  # a curved side: light to dark across it


def test_light_comes_from_the_upper_left(ds) -> None:
    img = ds.render(scene(1, shape=SPHERE, obj=6))[0]
    mask = object_mask(ds, scene(1, shape=SPHERE, obj=6))[0]
    value = img.amax(dim=0).numpy()
    rows, cols = np.nonzero(mask)
    r0, c0 = rows.mean(), cols.mean()
    upper_left = value[mask & (np.arange(RES)[:, None] < r0) & (np.arange(RES)[None] < c0)]
    lower_right = value[mask & (np.arange(RES)[:, None] > r0) & (np.arange(RES)[None] > c0)]
    assert upper_left.mean() > lower_right.mean() + 0.15


def test_orientation_tilts_the_floor_edge(ds) -> None:
    idx = scene(15, orient=np.arange(15), floor=0, wall=5)
    hue, _ = hue_sat(ds.render(idx))
    is_floor = np.abs((hue - 0.0 + 0.5) % 1.0 - 0.5) < 0.02

    def edge_row(col: int) -> np.ndarray:
        return np.argmax(is_floor[:, :, col], axis=1)

    # Floor begins lower on one side for positive angles, on the other for negative ones.
    tilt = edge_row(RES - 4) - edge_row(3)
    assert abs(tilt[7]) <= 1  # 0 degrees: level
    assert np.all(np.diff(tilt) >= 0) and tilt[-1] - tilt[0] > 10
    assert np.sign(tilt[0]) == -np.sign(tilt[-1])


def test_orientation_turns_the_cube_but_not_the_sphere(ds) -> None:
    cube = object_mask(ds, scene(3, shape=CUBE, orient=[0, 7, 14]))
    sphere = object_mask(ds, scene(3, shape=SPHERE, orient=[0, 7, 14]))
    assert (cube[0] ^ cube[1]).sum() > 20
    assert np.array_equal(sphere[0], sphere[1]) and np.array_equal(sphere[1], sphere[2])
    # The scene is mirror symmetric: -30 degrees is +30 degrees seen in a mirror.
    mirrored = cube[2][:, ::-1]
    assert (cube[0] ^ mirrored).sum() <= 4


def test_128_pixels_draw_the_same_scene(ds) -> None:
    idx = ds.factors.sample(16, np.random.default_rng(2))
    fine = get_dataset("shapes3d", resolution=128).render(idx)
    assert fine.shape == (16, 3, 128, 128)
    pooled = torch.nn.functional.avg_pool2d(fine, 2)
    assert (pooled - ds.render(idx)).abs().mean() < 0.01
