"""The planar finger: kinematics, cube, occlusion and feasibility, checked against an
independent numpy model of the documented scene."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest
import torch

from raystudy.data import Split, get_dataset
from raystudy.data.sources.procedural import finger as fm

RES = 64
UPPER, MIDDLE, LOWER, CX, CY, ROT, HUE = range(7)


@pytest.fixture(scope="module")
def ds():
    return get_dataset("finger")


def values(ds, col: int) -> np.ndarray:
    return np.asarray(ds.factors.factors[col].values)


def kinematics(ds, idx: np.ndarray) -> np.ndarray:
    """Joint and tip positions ``(B, 4, 2)`` (X, height) from the docstring's formula."""
    phi = np.deg2rad(np.stack([values(ds, k)[idx[:, k]] for k in range(3)], axis=1))
    absolute = np.cumsum(phi, axis=1)
    steps = (
        np.stack([np.sin(absolute), -np.cos(absolute)], axis=2)
        * np.asarray(fm.LINKS)[None, :, None]
    )
    base = np.tile([[0.0, fm.BASE_HEIGHT]], (idx.shape[0], 1, 1))
    return np.cumsum(np.concatenate([base, steps], axis=1), axis=1)


def screen(points: np.ndarray) -> np.ndarray:
    """World (X, height) in the finger's plane to pixel coordinates (column, row)."""
    return np.stack([(0.5 + points[..., 0]) * RES, (fm.FLOOR_ROW - points[..., 1]) * RES], -1)


def feasible_reference(ds, idx: np.ndarray) -> np.ndarray:
    """The documented rule: tip ball clear of the floor and of the cube's volume."""
    tip = kinematics(ds, idx)[:, 3]
    x, height = tip[:, 0], tip[:, 1]
    yaw = np.deg2rad(values(ds, ROT)[idx[:, ROT]])
    dx = x - values(ds, CX)[idx[:, CX]]
    dd = values(ds, CY)[idx[:, CY]]
    fx = np.cos(yaw) * dx + np.sin(yaw) * dd
    fd = -np.sin(yaw) * dx + np.cos(yaw) * dd
    # Distance from the point (|fx|, |fd|, height) to the box [-h, h]^2 x [0, 2h] (its part
    # above the floor), exact outside and negative inside.
    q = np.stack([np.abs(fx) - fm.CUBE_HALF, np.abs(fd) - fm.CUBE_HALF], 1)
    q = np.concatenate([q, (height - fm.CUBE_HEIGHT)[:, None]], 1)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    inside = np.minimum(q.max(axis=1), 0.0)
    cube = outside + inside
    return (height >= fm.TIP_RADIUS) & (cube >= fm.TIP_RADIUS)


def hue_of(rgb: np.ndarray) -> tuple[float, float]:
    h, s, _ = colorsys.rgb_to_hsv(*rgb.tolist())
    return h, s


def test_factor_space(ds) -> None:
    assert ds.factors.names == [
        "upper_joint",
        "middle_joint",
        "lower_joint",
        "cube_x",
        "cube_y",
        "cube_rotation",
        "hue",
    ]
    assert ds.factors.sizes == [30, 30, 30, 30, 30, 10, 12]
    assert np.allclose(values(ds, HUE), np.arange(12) / 12)
    assert ds.domains == ("sim", "real", "photo")


def test_output_contract(ds) -> None:
    idx = ds.factors.sample(32, np.random.default_rng(0))
    x = ds.render(idx)
    assert x.shape == (32, 3, RES, RES) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert torch.equal(x, get_dataset("finger").render(idx))
    singles = torch.cat([ds.render(idx[i : i + 1]) for i in range(6)])
    assert torch.allclose(x[:6], singles, atol=1e-6)


def test_the_fingertip_is_where_the_joint_angles_put_it(ds) -> None:
    rng = np.random.default_rng(1)
    idx = ds.factors.sample(400, rng)
    tip = screen(kinematics(ds, idx)[:, 3])
    # Tips well inside the frame, the cube moved far to the side of the tip.
    keep = (tip[:, 0] > 6) & (tip[:, 0] < RES - 6) & (tip[:, 1] > 6) & (tip[:, 1] < RES - 6)
    idx = idx[keep][:40]
    tip = tip[keep][:40]
    idx[:, CX] = np.where(tip[:, 0] < RES / 2, 29, 0)
    img = ds.render(idx)
    # The tip is the only near-white part of the scene.
    bright = (img.amin(dim=1) > 0.88).numpy()
    rows, cols = np.meshgrid(np.arange(RES) + 0.5, np.arange(RES) + 0.5, indexing="ij")
    weight = bright.sum(axis=(1, 2))
    assert np.all(weight > 3)
    got = np.stack([(bright * cols).sum((1, 2)) / weight, (bright * rows).sum((1, 2)) / weight], 1)
    assert np.abs(got - tip).max() < 1.0


def test_cube_takes_its_hue_and_moves_with_cube_x_and_cube_y(ds) -> None:
    # The finger swung far left (first link at -50 degrees, others bent back up and left).
    away = {UPPER: 0, MIDDLE: 0, LOWER: 15}
    base = np.array([[away[UPPER], away[MIDDLE], away[LOWER], 29, 0, 0, 0]])
    for h in range(12):
        idx = base.copy()
        idx[0, HUE] = h
        img = ds.render(idx)[0].numpy()
        hue, sat = np.apply_along_axis(hue_of, 0, img)
        cube = sat > 0.9
        assert cube.sum() > 40
        gap = np.abs((hue[cube] - h / 12 + 0.5) % 1.0 - 0.5)
        assert gap.max() < 0.01

    def centroid(idx: np.ndarray) -> np.ndarray:
        img = ds.render(idx).numpy()
        sat = (img.max(1) - img.min(1)) / np.maximum(img.max(1), 1e-6)
        cube = sat > 0.9
        assert cube.sum(axis=(1, 2)).min() > 40
        cs = np.arange(RES)[None, None, :]
        rs = np.arange(RES)[None, :, None]
        n = cube.sum(axis=(1, 2))
        return np.stack([(cube * cs).sum((1, 2)) / n, (cube * rs).sum((1, 2)) / n], 1)

    # Centroids of thresholded masks move in whole pixels: fit the slope over many steps.
    steps = np.arange(10, 30)
    xs = np.repeat(base, steps.size, axis=0)
    xs[:, CX] = steps
    c = centroid(xs)
    slope, _ = np.polyfit(steps, c[:, 0], 1)
    assert slope == pytest.approx(0.6 / 29 * RES, rel=0.05)  # cube_x spans 0.6 image widths
    assert np.ptp(c[:, 1]) <= 1.0
    steps = np.arange(30)
    ys = np.repeat(base, steps.size, axis=0)
    ys[:, CY] = steps
    c = centroid(ys)
    # Farther from the camera is higher on the screen: tilt * depth.
    slope, _ = np.polyfit(steps, c[:, 1], 1)
    assert slope == pytest.approx(-fm.TILT * 0.3 / 29 * RES, rel=0.1)
    assert np.ptp(c[:, 0]) <= 1.0


def test_links_are_drawn_over_the_cube(ds) -> None:
    rng = np.random.default_rng(2)
    idx = ds.factors.sample(20_000, rng)
    points = kinematics(ds, idx)
    middle = screen(0.5 * (points[:, 2] + points[:, 3])) / RES  # lower link's midpoint
    u0 = 0.5 + values(ds, CX)[idx[:, CX]]
    v0 = fm.FLOOR_ROW - fm.TILT * values(ds, CY)[idx[:, CY]]
    inside = (np.abs(middle[:, 0] - u0) < 0.03) & (middle[:, 1] > v0 - fm.CUBE_HEIGHT + 0.02)
    inside &= middle[:, 1] < v0 - 0.02
    chosen = np.flatnonzero(inside)[:10]
    assert chosen.size == 10
    over = idx[chosen]
    moved = over.copy()
    moved[:, :3] = [0, 0, 15]  # the finger far to the left
    px = np.floor(middle[chosen] * RES).astype(int)
    with_finger = ds.render(over).numpy()[np.arange(10), :, px[:, 1], px[:, 0]]
    without = ds.render(moved).numpy()[np.arange(10), :, px[:, 1], px[:, 0]]
    sat = lambda rgb: (rgb.max(1) - rgb.min(1)) / np.maximum(rgb.max(1), 1e-6)  # noqa: E731
    assert np.all(sat(without) > 0.9)  # the cube is there ...
    assert np.all(sat(with_finger) < 0.05)  # ... and the grey link covers it


def test_feasible_matches_the_documented_rule(ds) -> None:
    idx = ds.factors.sample(50_000, np.random.default_rng(3))
    got = ds.feasible(idx).numpy()
    want = feasible_reference(ds, idx)
    assert np.array_equal(got, want)
    assert 0.02 < 1 - got.mean() < 0.3  # infeasible states exist, but are a minority


def test_a_finger_pointing_down_hits_the_floor(ds) -> None:
    # Joint angles closest to 0: the finger hangs straight, its tip at the floor.
    straight = np.array([[15, 15, 15, 0, 29, 0, 0]])
    assert kinematics(ds, straight)[0, 3, 1] < fm.TIP_RADIUS
    assert not bool(ds.feasible(straight)[0])


def test_a_tip_inside_the_cube_is_infeasible_and_feasible_beside_it(ds) -> None:
    idx = ds.factors.sample(20_000, np.random.default_rng(4))
    tip = kinematics(ds, idx)[:, 3]
    low = (tip[:, 1] > fm.TIP_RADIUS + 0.01) & (tip[:, 1] < fm.CUBE_HEIGHT - 0.02)
    idx, tip = idx[low][:20], tip[low][:20]
    # Put the cube right under the tip (nearest cube_x, in the finger's plane).
    idx[:, CX] = np.abs(values(ds, CX)[None, :] - tip[:, :1]).argmin(axis=1)
    idx[:, CY] = 0
    assert not ds.feasible(idx).any()
    idx[:, CX] = np.where(tip[:, 0] < 0, 29, 0)  # the cube on the far side
    assert ds.feasible(idx).all()


def test_samplers_never_yield_an_infeasible_state(ds) -> None:
    split = Split("all", None, [], ds)
    x = split.sample("encoder", 100_000, 5)
    assert x.shape == (100_000, 7)
    assert feasible_reference(ds, x).all()
    # Only infeasible states are missing: joints still cover their whole range.
    for col in range(7):
        assert np.unique(x[:, col]).size == ds.factors.sizes[col]


def test_weak_pairs_are_both_feasible(ds) -> None:
    split = Split("all", None, [], ds)
    first, second = split.sample_pairs("encoder", 5_000, 1, 6)
    assert np.all((first != second).sum(axis=1) == 1)
    assert feasible_reference(ds, first).all() and feasible_reference(ds, second).all()


def test_128_pixels_draw_the_same_scene(ds) -> None:
    idx = ds.factors.sample(16, np.random.default_rng(7))
    fine = get_dataset("finger", resolution=128).render(idx)
    assert fine.shape == (16, 3, 128, 128)
    pooled = torch.nn.functional.avg_pool2d(fine, 2)
    assert (pooled - ds.render(idx)).abs().mean() < 0.01
    with pytest.raises(ValueError, match="resolution 64 or 128, got 96"):
        get_dataset("finger", resolution=96)
