"""The procedural dSprites renderers: what each factor means in the image."""

from __future__ import annotations

import colorsys
import math

import numpy as np
import pytest
import torch

from raystudy.data import DATASETS, get_dataset, get_split
from raystudy.data.sources.procedural import dsprites as dsp
from raystudy.data.sources.procedural import sdf

RES = 64
SQUARE, ELLIPSE, HEART = 0, 1, 2


@pytest.fixture(scope="module")
def mono():
    return get_dataset("dsprites")


@pytest.fixture(scope="module")
def color():
    return get_dataset("color_dsprites")


def indices(n: int = 1, **factors: object) -> np.ndarray:
    """``n`` color_dsprites index rows at a default sprite, with some factors overridden
    (scalars or length-n sequences)."""
    base = {"shape": SQUARE, "scale": 5, "orientation": 0, "pos_x": 16, "pos_y": 16, "hue": 0}
    base.update(factors)
    cols = [np.broadcast_to(np.asarray(base[name]), (n,)) for name in base]
    return np.stack(cols, axis=1).astype(np.int64)


def mono_indices(n: int = 1, **factors: object) -> np.ndarray:
    return indices(n, **factors)[:, :5]


def centroid(mask: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Coverage-weighted pixel-centre centroid (column, row) of ``[B, H, W]`` masks."""
    centres = torch.arange(mask.shape[-1], dtype=torch.float64) + 0.5
    m = mask.double()
    total = m.sum(dim=(1, 2))
    cols = (m.sum(dim=1) * centres).sum(dim=1) / total
    rows = (m.sum(dim=2) * centres).sum(dim=1) / total
    return cols.numpy(), rows.numpy()


def area(mask: torch.Tensor) -> np.ndarray:
    """Covered area in units of the image area."""
    return mask.double().sum(dim=(-2, -1)).numpy() / RES**2


def reference_coverage(idx: np.ndarray) -> torch.Tensor:
    """The documented geometry evaluated on every pixel, one image at a time: a slow
    renderer to check the fast one against (it uses no render window)."""
    centres = (torch.arange(RES, dtype=torch.float64) + 0.5) / RES
    ys, xs = torch.meshgrid(centres, centres, indexing="ij")
    sdfs = (
        lambda u, v: sdf.box(u, v, dsp.SQUARE_HALF_SIDE, dsp.SQUARE_HALF_SIDE),
        lambda u, v: sdf.ellipse(u, v, *dsp.ELLIPSE_SEMI_AXES),
        lambda u, v: sdf.heart(u, v, dsp.HEART_HALF_DIAGONAL),
    )
    out = []
    for shape, scale_i, ori_i, px_i, py_i in idx[:, :5].tolist():
        scale = 0.5 + 0.1 * scale_i
        theta = 2 * math.pi * ori_i / 40
        cx = dsp.MARGIN + (1 - 2 * dsp.MARGIN) * px_i / 31
        cy = dsp.MARGIN + (1 - 2 * dsp.MARGIN) * py_i / 31
        dx, dy = xs - cx, ys - cy
        u = (math.cos(theta) * dx + math.sin(theta) * dy) / scale
        v = (math.cos(theta) * dy - math.sin(theta) * dx) / scale
        distance = sdfs[shape](u, v) * scale
        out.append((0.5 - distance * RES).clamp(0, 1))
    return torch.stack(out).float()


# --- output contract ---------------------------------------------------------------------


@pytest.mark.parametrize(("name", "channels"), [("dsprites", 1), ("color_dsprites", 3)])
def test_output_shape_dtype_range(name: str, channels: int) -> None:
    ds = get_dataset(name)
    idx = ds.factors.sample(64, np.random.default_rng(0))
    x = ds.render(idx)
    assert x.shape == (64, channels, RES, RES)
    assert x.dtype == torch.float32
    assert x.device.type == "cpu"
    assert float(x.min()) >= 0.0
    assert float(x.max()) <= 1.0
    # Every image shows a sprite with a fully covered interior, on black.
    assert torch.all(x.amax(dim=(1, 2, 3)) == 1.0)
    assert torch.all((x.amax(dim=1) == 0).float().mean(dim=(1, 2)) > 0.7)


def test_factor_spaces_are_the_dsprites_grid(mono, color) -> None:
    assert mono.factors.names == ["shape", "scale", "orientation", "pos_x", "pos_y"]
    assert mono.factors.sizes == [3, 6, 40, 32, 32]
    assert color.factors.names == [*mono.factors.names, "hue"]
    assert color.factors.sizes == [3, 6, 40, 32, 32, 12]
    ori = np.asarray(color.factors.factors[2].values)
    assert ori[0] == 0.0 and ori[-1] < 2 * np.pi
    assert np.allclose(np.diff(ori), 2 * np.pi / 40)
    assert np.allclose(color.factors.factors[1].values, np.linspace(0.5, 1.0, 6))
    assert np.allclose(color.factors.factors[5].values, np.arange(12) / 12)
    assert (mono.channels, color.channels) == (1, 3)
    assert set(DATASETS) >= {"dsprites", "color_dsprites"}


def test_empty_batch(color) -> None:
    assert color.render(np.zeros((0, 6), dtype=np.int64)).shape == (0, 3, RES, RES)


# --- what the factors mean ---------------------------------------------------------------


@pytest.mark.parametrize("shape", [SQUARE, ELLIPSE])
def test_centroid_follows_pos_x_and_pos_y(mono, shape: int) -> None:
    steps = np.arange(32)
    step_px = (1 - 2 * dsp.MARGIN) * RES / 31
    for moving, fixed, axis in (("pos_x", "pos_y", 0), ("pos_y", "pos_x", 1)):
        idx = mono_indices(32, shape=shape, orientation=3, **{moving: steps, fixed: 16})
        cents = centroid(mono.render(idx)[:, 0])
        along, across = cents[axis], cents[1 - axis]
        assert np.all(np.diff(along) > 0), f"{moving} centroid is not monotone"
        slope, intercept = np.polyfit(steps, along, 1)
        assert slope == pytest.approx(step_px, rel=0.05)
        assert intercept == pytest.approx(dsp.MARGIN * RES, abs=1.0)
        # Where the sprite is clipped by the border the centroid bends; elsewhere it is linear.
        inner = slice(4, 28)
        residual = along[inner] - (slope * steps[inner] + intercept)
        assert np.abs(residual).max() < 0.3
        assert np.ptp(across[inner]) < 0.3, f"{moving} also moved the other axis"


def test_pos_y_grows_downwards(mono) -> None:
    top, bottom = mono.render(mono_indices(2, pos_y=[0, 31]))[:, 0]
    assert top[: RES // 2].sum() > top[RES // 2 :].sum()
    assert bottom[RES // 2 :].sum() > bottom[: RES // 2].sum()


@pytest.mark.parametrize("shape", [SQUARE, ELLIPSE, HEART])
def test_area_grows_with_scale(mono, shape: int) -> None:
    scales = np.asarray(mono.factors.factors[1].values)
    areas = area(mono.render(mono_indices(6, shape=shape, scale=np.arange(6)))[:, 0])
    assert np.all(np.diff(areas) > 0)
    # Lengths scale linearly, so areas quadratically.
    assert np.allclose(areas / areas[-1], (scales / scales[-1]) ** 2, rtol=0.05)


def test_shapes_differ_and_have_their_geometric_areas(mono) -> None:
    masks = mono.render(mono_indices(3, shape=[SQUARE, ELLIPSE, HEART]))[:, 0]
    for i in range(3):
        for j in range(i + 1, 3):
            differing = (masks[i] - masks[j]).abs().sum() / RES**2
            assert differing > 0.01, f"shapes {i} and {j} look alike"
    got = area(masks)
    scale = mono.factors.factors[1].values[5]
    h = dsp.HEART_HALF_DIAGONAL
    expected = scale**2 * np.array(
        [
            (2 * dsp.SQUARE_HALF_SIDE) ** 2,
            math.pi * dsp.ELLIPSE_SEMI_AXES[0] * dsp.ELLIPSE_SEMI_AXES[1],
            2 * h**2 + math.pi * h**2 / 2,  # the diamond plus two half discs
        ]
    )
    assert np.allclose(got, expected, rtol=0.03)
    # Square of side 2a against the inscribed 2:1 ellipse: pi * a * (a/2) / (2a)^2 = pi / 8.
    assert got[ELLIPSE] / got[SQUARE] == pytest.approx(math.pi / 8, rel=0.03)
    # The sprites span about 0.3 of the width at scale 1, as in dSprites.
    widths = (masks > 0.5).any(dim=1).float().sum(dim=1) / RES / scale
    assert np.allclose(widths.numpy(), 0.3, atol=0.04)


def test_heart_points_down(mono) -> None:
    heart = mono.render(mono_indices(1, shape=HEART))[0, 0]
    rows = (heart > 0.5).float().sum(dim=1)
    filled = torch.nonzero(rows).squeeze(1)
    top, bottom = rows[filled[:3]].mean(), rows[filled[-3:]].mean()
    assert top > 3 * bottom  # wide lobes above, a narrow tip below


def test_orientation_turns_the_ellipse(mono) -> None:
    steps = np.arange(0, 40, 3)
    masks = mono.render(mono_indices(steps.size, shape=ELLIPSE, orientation=steps))[:, 0]
    assert (masks[0] - masks[5]).abs().sum() > 20  # 0 vs 90 degrees: clearly different
    centres = torch.arange(RES, dtype=torch.float64) + 0.5
    ys, xs = torch.meshgrid(centres, centres, indexing="ij")
    for step, m in zip(steps, masks.double(), strict=True):
        total = m.sum()
        mx, my = (m * xs).sum() / total, (m * ys).sum() / total
        cxx = (m * (xs - mx) ** 2).sum()
        cyy = (m * (ys - my) ** 2).sum()
        cxy = (m * (xs - mx) * (ys - my)).sum()
        # Long-axis angle in image coordinates (y down): clockwise on screen, mod 180 degrees.
        axis = 0.5 * math.atan2(2 * cxy, cxx - cyy)
        expected = 2 * math.pi * step / 40
        gap = (axis - expected + math.pi / 2) % math.pi - math.pi / 2
        assert abs(gap) < math.radians(2), f"orientation {step}: axis at {math.degrees(axis)}"


def test_documented_symmetries(mono) -> None:
    square = mono.render(mono_indices(2, shape=SQUARE, orientation=[3, 13]))[:, 0]
    ellipse = mono.render(mono_indices(2, shape=ELLIPSE, orientation=[3, 23]))[:, 0]
    heart = mono.render(mono_indices(2, shape=HEART, orientation=[3, 13]))[:, 0]
    assert torch.allclose(square[0], square[1], atol=1e-4)  # 90 degrees
    assert torch.allclose(ellipse[0], ellipse[1], atol=1e-4)  # 180 degrees
    assert (heart[0] - heart[1]).abs().sum() > 20  # the heart has no rotational symmetry


def test_colour_matches_hue(color, mono) -> None:
    idx = indices(12, hue=np.arange(12), orientation=7)
    rgb = color.render(idx)
    inside = mono.render(idx[:, :5])[:, 0] == 1.0
    for k in range(12):
        pixels = rgb[k][:, inside[k]]
        assert pixels.shape[1] > 50
        r, g, b = pixels.double().mean(dim=1).tolist()
        hue, sat, val = colorsys.rgb_to_hsv(r, g, b)
        gap = (hue - k / 12 + 0.5) % 1.0 - 0.5
        assert abs(gap) < 0.005, f"hue {k}: got {hue}"
        assert sat == pytest.approx(1.0, abs=1e-5)
        assert val == pytest.approx(1.0, abs=1e-5)
    # The coloured sprite has exactly the monochrome sprite's coverage (V = 1 for every hue).
    assert torch.allclose(rgb.amax(dim=1), mono.render(idx[:, :5])[:, 0], atol=1e-6)


# --- implementation properties -----------------------------------------------------------


def test_matches_full_image_reference(color) -> None:
    # Corners, the largest scale and 45-degree turns stress the render window the most.
    rng = np.random.default_rng(3)
    idx = color.factors.sample(48, rng)
    corners = indices(
        8,
        shape=[0, 0, 1, 2, 2, 0, 2, 1],
        scale=5,
        orientation=[5, 15, 5, 0, 20, 25, 10, 30],
        pos_x=[0, 31, 0, 31, 0, 31, 16, 31],
        pos_y=[0, 31, 31, 0, 16, 0, 31, 31],
    )
    # The square's corner reaches farthest from its centre: sweep it over every position.
    steps = np.arange(32)
    sweep = indices(32, shape=SQUARE, orientation=5, pos_x=steps, pos_y=steps[::-1])
    idx = np.concatenate([idx, corners, sweep])
    fast = color.render(idx).amax(dim=1)
    assert torch.allclose(fast, reference_coverage(idx), atol=2e-5)


def test_other_resolutions_draw_the_same_scene(color) -> None:
    idx = color.factors.sample(64, np.random.default_rng(6))
    fine = get_dataset("color_dsprites", resolution=128).render(idx)
    assert fine.shape == (64, 3, 128, 128)
    pooled = torch.nn.functional.avg_pool2d(fine, 2)
    assert (pooled - color.render(idx)).abs().mean() < 1e-3


def test_subpixel_moves_change_pixels_smoothly(mono) -> None:
    # Anti-aliasing: edge pixels take intermediate values, not just 0 or 1.
    x = mono.render(mono_indices(1, shape=ELLIPSE, orientation=4))[0, 0]
    partial = ((x > 0.05) & (x < 0.95)).sum()
    assert partial > 10


def test_same_indices_give_bit_identical_images(color) -> None:
    idx = color.factors.sample(32, np.random.default_rng(1))
    first = color.render(idx)
    again = color.render(idx)
    fresh = get_dataset("color_dsprites").render(idx)
    assert torch.equal(first, again)
    assert torch.equal(first, fresh)


def test_batch_equals_per_item_renders(color) -> None:
    idx = color.factors.sample(24, np.random.default_rng(2))
    batch = color.render(idx)
    singles = torch.cat([color.render(idx[i : i + 1]) for i in range(idx.shape[0])])
    assert torch.allclose(batch, singles, atol=1e-6)


def test_numpy_and_torch_inputs_agree(color) -> None:
    idx = color.factors.sample(16, np.random.default_rng(4))
    from_numpy = color.render(idx)
    from_torch = color.render(torch.from_numpy(idx))
    from_int32 = color.render(torch.from_numpy(idx).int())
    assert torch.equal(from_numpy, from_torch)
    assert torch.equal(from_numpy, from_int32)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_renders_on_the_device_of_the_indices(color) -> None:
    idx = torch.from_numpy(color.factors.sample(64, np.random.default_rng(5)))
    on_gpu = color.render(idx.cuda())
    assert on_gpu.device.type == "cuda"
    assert torch.allclose(on_gpu.cpu(), color.render(idx), atol=1e-5)


# --- errors ------------------------------------------------------------------------------


def test_unknown_domain_names_the_allowed_ones(color) -> None:
    with pytest.raises(ValueError, match=r"no domain 'cartoon'; allowed domains: sim, real, photo"):
        color.render(indices(1), domain="cartoon")


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        (indices(1, hue=12), r"'hue'.*12.*0\.\.11"),
        (indices(1, pos_x=-1), r"'pos_x'.*-1.*0\.\.31"),
        (indices(1)[:, :5], r"shape \(B, 6\)"),
        (indices(1).astype(np.float32), "integers"),
        (np.zeros(6, dtype=np.int64), r"shape \(B, 6\)"),
    ],
)
def test_bad_indices_are_rejected(color, bad: np.ndarray, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        color.render(bad)
    with pytest.raises(ValueError, match=pattern):
        color.render(torch.from_numpy(np.asarray(bad)))


def test_feasible_defaults_to_all(color) -> None:
    idx = color.factors.sample(10, np.random.default_rng(0))
    ok = color.feasible(idx)
    assert ok.dtype == torch.bool and ok.shape == (10,) and bool(ok.all())


def test_unknown_dataset_suggests_a_name() -> None:
    with pytest.raises(
        ValueError, match=r"allowed: .*circles, color_dsprites, dsprites, .*\(did you mean"
    ):
        get_dataset("colour_dsprites")


def test_unknown_or_missing_options_are_named() -> None:
    with pytest.raises(
        ValueError,
        match=r"'dsprites': unknown option 'orientation_bin'.*"
        r"did you mean 'orientation_bins'",
    ):
        get_dataset("dsprites", orientation_bin=10)
    with pytest.raises(ValueError, match=r"'shapes3d_file' needs option\(s\) path"):
        get_dataset("shapes3d_file")


# --- orientation_bins ----------------------------------------------------------------------


def test_orientation_bins_make_orientation_injective(mono) -> None:
    binned = get_dataset("dsprites", orientation_bins=10)
    assert binned.factors.sizes == [3, 6, 10, 32, 32]
    angles = np.asarray(binned.factors.factors[2].values)
    assert np.allclose(angles, np.arange(10) * (math.pi / 2) / 10)
    # Every pair of bins gives a different image for every shape, the square included
    # (whose 40-angle grid repeats every 10 steps).
    for shape in (SQUARE, ELLIPSE, HEART):
        masks = binned.render(mono_indices(10, shape=shape, orientation=np.arange(10)))[:, 0]
        flat = masks.reshape(10, -1)
        gaps = torch.cdist(flat, flat, p=1)
        assert float(gaps[~torch.eye(10, dtype=torch.bool)].min()) > 1.0
    # Bin 5 of the quarter turn (45 degrees) is step 5 of the official full turn.
    assert torch.allclose(
        binned.render(mono_indices(1, shape=HEART, orientation=5)),
        mono.render(mono_indices(1, shape=HEART, orientation=5)),
        atol=1e-5,
    )
    with pytest.raises(ValueError, match=r"orientation_bins must be in 1\.\.40"):
        get_dataset("dsprites", orientation_bins=0)


# --- orientation_grid ----------------------------------------------------------------------


def test_the_closed_orientation_grid_is_the_official_files_angles(mono) -> None:
    closed = get_dataset("color_dsprites", orientation_grid="closed")
    angles = np.asarray(closed.factors.factors[2].values)
    assert np.allclose(angles, np.linspace(0.0, 2 * math.pi, 40))  # latents_values' column
    first, last = closed.render(indices(2, shape=HEART, orientation=[0, 39]))
    assert torch.allclose(first, last, atol=1e-5)  # 0 and 2 pi: the official files' repeat
    # Between grid points the two grids differ; at orientation 0 they agree.
    plain = mono.render(mono_indices(2, shape=HEART, orientation=[0, 13]))
    mono_closed = get_dataset("dsprites", orientation_grid="closed")
    ours = mono_closed.render(mono_indices(2, shape=HEART, orientation=[0, 13]))
    assert torch.allclose(plain[0], ours[0], atol=1e-5)
    assert not torch.allclose(plain[1], ours[1], atol=1e-2)
    with pytest.raises(ValueError, match="orientation_grid must be one of open, closed"):
        get_dataset("dsprites", orientation_grid="official")
    with pytest.raises(ValueError, match="cannot be combined"):
        get_dataset("dsprites", orientation_grid="closed", orientation_bins=10)


@pytest.mark.parametrize(("grid", "copied"), [("open", True), ("closed", False)])
def test_montero_element_holds_out_images_training_has_only_on_the_open_grid(
    grid: str, copied: bool
) -> None:
    # The held-out ellipses (orientation 14..25) turned by 180 degrees are training images:
    # the same pixels on the open grid, half a step away on the official one.
    ds = get_dataset("dsprites", orientation_grid=grid)
    split = get_split("montero_element", ds)
    held = split.sample("heldout", 64, np.random.default_rng(0))
    gaps = []
    for shift in (19, 20):
        twin = held.copy()
        twin[:, 2] = (twin[:, 2] - shift) % 40
        assert split.mask("encoder", twin).all()
        diff = ds.render(torch.from_numpy(held)) - ds.render(torch.from_numpy(twin))
        gaps.append(diff.abs().amax(dim=(1, 2, 3)))
    nearest = torch.minimum(*gaps)
    if copied:
        assert float(nearest.max()) < 1e-5
    else:
        assert float(nearest.min()) > 0.1
