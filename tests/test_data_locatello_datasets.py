"""Locatello et al. (2019)'s other datasets: the dSprites variants (colour, noisy, scream),
procedural and from a dSprites file, and SmallNORB and Cars3D read from small files written
here in the published formats."""

from __future__ import annotations

import copy
import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
from PIL import Image
from sklearn.datasets import load_sample_image

from raystudy.checks import load_spec
from raystudy.data import DatasetFileError, get_dataset, get_split
from raystudy.data.core.catalog import describe
from raystudy.data.core.registry import DatasetOptionError
from raystudy.data.domains.sprite_appearances import fit_photograph, load_photograph
from raystudy.models import VAE, Objective, build
from raystudy.spec import ModelConfig, TrainConfig
from raystudy.training.loop import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VARIANTS = ("random_color_dsprites", "noisy_dsprites", "scream_dsprites")
# The NORB binary matrix types (https://cs.nyu.edu/~ylclab/data/norb-v1.0-small/).
BYTE_MATRIX, INT_MATRIX = 0x1E3D4C55, 0x1E3D4C54
TRAINING = "smallnorb-5x46789x9x18x6x2x96x96-training"
TESTING = "smallnorb-5x01235x9x18x6x2x96x96-testing"


def sample(sizes: list[int], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


def sprite_masks(idx: np.ndarray) -> np.ndarray:
    """The plain dSprites coverage of the same factors: the variants' sprite."""
    return get_dataset("dsprites").render(idx)[:, 0].numpy()


# --- the dSprites variants ------------------------------------------------------------------


@pytest.mark.parametrize("name", VARIANTS)
def test_variants_keep_the_dsprites_grid_in_three_channels(name: str) -> None:
    ds = get_dataset(name, orientation_grid="closed")
    plain = get_dataset("dsprites", orientation_grid="closed")
    assert ds.factors.names == plain.factors.names and ds.factors.sizes == plain.factors.sizes
    idx = sample(ds.factors.sizes, 6, 0)
    images = ds.render(idx)
    assert images.shape == (6, 3, 64, 64) and images.dtype == torch.float32
    assert float(images.min()) >= 0.0 and float(images.max()) <= 1.0
    assert ds.render(idx, domain="real").shape == (6, 3, 64, 64)
    # dSprites' paper splits apply: the factor names are the dSprites family's.
    assert get_split("montero_element", ds).sample("encoder", 4, 0).shape == (4, 5)
    info = describe(name)
    assert info.channels == 3 and not info.needs_file and info.total == 737_280


def test_random_colour_is_one_colour_per_image_in_half_to_full_intensity() -> None:
    ds = get_dataset("random_color_dsprites")
    idx = sample(ds.factors.sizes, 256, 1)
    x = ds.render(idx).numpy()
    m = sprite_masks(idx)
    assert np.all(x[np.broadcast_to((m == 0)[:, None], x.shape)] == 0.0)  # black background
    full = m == 1.0
    colours = np.stack([x[i][:, full[i]].mean(axis=1) for i in range(len(x))])
    spread = np.stack([np.ptp(x[i][:, full[i]], axis=1) for i in range(len(x))])
    assert spread.max() < 1e-6  # one colour over the whole sprite
    # atol: the coverage itself is float32, its rounding may differ between two renders.
    np.testing.assert_allclose(x, m[:, None] * colours[:, :, None, None], atol=2e-5)
    assert colours.min() >= 0.5 and colours.max() < 1.0
    # Uniform on [0.5, 1): mean 0.75, sd 0.144 / sqrt(256) = 0.009 per channel.
    np.testing.assert_allclose(colours.mean(axis=0), 0.75, atol=0.03)
    assert abs(np.corrcoef(colours.T)[0, 1]) < 0.2  # channels drawn independently


def test_noisy_is_a_white_sprite_over_independent_uniform_noise() -> None:
    ds = get_dataset("noisy_dsprites")
    idx = sample(ds.factors.sizes, 64, 2)
    x = ds.render(idx).numpy()
    m = sprite_masks(idx)[:, None]
    assert np.all(x[np.broadcast_to(m == 1.0, x.shape)] == 1.0)
    # min(m + n, 1) >= m on the anti-aliased edge too, and is m + n below 1.
    assert np.all(x >= np.broadcast_to(m, x.shape) - 1e-6)
    noise = x.transpose(1, 0, 2, 3)[:, np.broadcast_to(m == 0.0, x.shape)[:, 0]]  # [3, pixels]
    assert noise.min() >= 0.0 and noise.max() < 1.0
    np.testing.assert_allclose(noise.mean(axis=1), 0.5, atol=0.005)
    np.testing.assert_allclose(noise.var(axis=1), 1 / 12, atol=0.002)
    counts = np.histogram(noise, bins=10, range=(0.0, 1.0))[0] / noise.size
    np.testing.assert_allclose(counts, 0.1, atol=0.005)
    assert abs(np.corrcoef(noise[0], noise[1])[0, 1]) < 0.01  # channels independent
    bare = np.broadcast_to(m == 0.0, x.shape)
    pairs = bare[..., 1:] & bare[..., :-1]  # horizontal neighbours, both background
    right = np.corrcoef(x[..., 1:][pairs], x[..., :-1][pairs])[0, 1]
    both = bare[0] & bare[1]  # the same pixel of two images
    across = np.corrcoef(x[0][both], x[1][both])[0, 1]
    assert abs(right) < 0.01 and abs(across) < 0.05


def recover_scream(photo: np.ndarray, x: np.ndarray, m: np.ndarray) -> tuple[int, int, np.ndarray]:
    """The patch offset and colour shift ``s`` of one scream image ``x`` ([3, 64, 64]) over a
    photograph ``photo`` ([h, w, 3] in [0, 1]): where the sprite mask ``m`` is 0 or 1,
    ``b = x`` or ``1 - x`` must be ``(patch + s) / 2`` for one offset and one ``s``."""
    b = np.where(m == 1.0, 1.0 - x, x)  # [3, 64, 64]
    h, w = photo.shape[:2]
    rows, cols = np.nonzero((m == 0.0) | (m == 1.0))
    pick = np.random.default_rng(0).choice(rows.size, 40, replace=False)
    shifts = np.stack(
        [
            2.0 * b[:, r, c] - photo[r : r + h - 64, c : c + w - 64]
            for r, c in zip(rows[pick], cols[pick], strict=True)
        ]
    )  # [40, offsets_y, offsets_x, 3]: the shift each offset would imply
    spread = np.ptp(shifts, axis=0).max(axis=-1)
    top, left = np.unravel_index(int(spread.argmin()), spread.shape)
    return int(top), int(left), shifts[:, top, left].mean(axis=0)


def check_scream(photo: np.ndarray, x: np.ndarray, m: np.ndarray) -> tuple[int, int]:
    top, left, s = recover_scream(photo, x, m)
    patch = photo[top : top + 64, left : left + 64].transpose(2, 0, 1)
    b = (patch + s[:, None, None]) / 2.0
    np.testing.assert_allclose(x, b + m * (1.0 - 2.0 * b), atol=2e-5)  # every pixel
    assert np.all((s >= 0.0) & (s < 1.0))
    return top, left


def test_scream_inverts_a_colour_shifted_patch_of_the_photograph_under_the_sprite() -> None:
    ds = get_dataset("scream_dsprites")
    photo = fit_photograph(load_photograph(None), 64).astype(np.float64) / 255.0
    idx = sample(ds.factors.sizes, 12, 3)
    x = ds.render(idx).numpy().astype(np.float64)
    m = sprite_masks(idx)
    offsets = [check_scream(photo, x[i], m[i]) for i in range(len(x))]
    tops, lefts = np.array(offsets).T
    assert tops.max() <= photo.shape[0] - 65 and lefts.max() <= photo.shape[1] - 65
    assert len(set(offsets)) == len(offsets)  # a patch per image


def test_scream_photograph_is_fitted_in_the_scaled_box(tmp_path: Path) -> None:
    china = load_photograph(None)
    assert china.shape == (427, 640, 3) and china.dtype == np.uint8
    np.testing.assert_array_equal(china, load_sample_image("china.jpg"))
    for res, box in ((64, 350), (128, 700)):
        fitted = fit_photograph(china, res)
        assert fitted.shape[1] == box and abs(fitted.shape[0] - 427 * box / 640) <= 0.5
    # A picture of one's own, in a real PNG file: a tall one fills the box's height. Random
    # pixels, so that no two patches look alike.
    tall = np.random.default_rng(0).integers(0, 256, (600, 300, 3), dtype=np.uint8)
    Image.fromarray(tall).save(tmp_path / "tall.png")
    ds = get_dataset("scream_dsprites", photograph=str(tmp_path / "tall.png"))
    photo = ds.appearance.photo
    assert photo.shape[0] == 274 and abs(photo.shape[1] - 300 * 274 / 600) <= 0.5
    idx = sample(ds.factors.sizes, 3, 4)
    x = ds.render(idx).numpy().astype(np.float64)
    m = sprite_masks(idx)
    for i in range(3):
        check_scream(photo.astype(np.float64) / 255.0, x[i], m[i])


def test_fixed_nuisance_is_a_function_of_factors_and_seed() -> None:
    idx = sample([3, 6, 40, 32, 32], 16, 5)
    for name in VARIANTS:
        a = get_dataset(name).render(idx)
        assert torch.equal(a, get_dataset(name).render(idx))  # another instance, same images
        assert torch.equal(a[3:9], get_dataset(name).render(idx[3:9]))  # batch-independent
        other = get_dataset(name, nuisance_seed=1).render(idx)
        assert (a - other).abs().amax(dim=(1, 2, 3)).min() > 0.01  # every image changes
    noisy = get_dataset("noisy_dsprites")
    same_sprite = np.repeat(idx[:1], 2, axis=0)
    same_sprite[1, 3] = (same_sprite[1, 3] + 1) % 32  # moved by one step: new background
    first, second = noisy.render(same_sprite)
    both = (first < 1) & (second < 1)
    # Two independent uniforms differ by 1/3 on average; the same draw would differ by 0.
    assert (first[both] - second[both]).abs().mean() > 0.3


def test_fresh_nuisance_is_drawn_anew_from_the_seeded_generator() -> None:
    ds = get_dataset("scream_dsprites", nuisance="fresh")
    idx = sample(ds.factors.sizes, 8, 6)
    torch.manual_seed(7)
    a, b = ds.render(idx), ds.render(idx)
    assert (a - b).abs().amax(dim=(1, 2, 3)).min() > 0.01
    torch.manual_seed(7)
    assert torch.equal(a, ds.render(idx))


def test_fresh_noise_trains_and_resumes_exactly() -> None:
    """A checkpoint holds torch's generator, so a resumed trial draws the same noise."""
    ds = get_dataset("noisy_dsprites", nuisance="fresh")
    split = get_split("iid", ds)
    cfg = TrainConfig(steps=4, batch_size=8, lr=1e-3, report_every=2, checkpoint_every=2)

    def model() -> tuple[VAE, Objective]:
        torch.manual_seed(0)
        return build(ModelConfig(objective="beta_vae", latent_dim=4), 3, 64, 5)

    states = {}
    full, objective = model()
    cpu = torch.device("cpu")

    def keep(step: int, row: object, state: dict[str, object] | None) -> None:
        states.setdefault(step, copy.deepcopy(state))

    train(full, objective, ds, split, cfg, seed=0, device=cpu, on_progress=keep)
    resumed, objective = model()
    train(resumed, objective, ds, split, cfg, seed=0, device=cpu, resume_from=states[2])
    for p, q in zip(full.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p, q)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", VARIANTS)
def test_variants_render_on_the_device_of_the_indices(name: str) -> None:
    """The fixed nuisance is integer hashing: the GPU draws the CPU's backgrounds."""
    ds = get_dataset(name)
    idx = torch.from_numpy(sample(ds.factors.sizes, 64, 9))
    on_gpu = ds.render(idx.cuda())
    assert on_gpu.device.type == "cuda"
    assert torch.allclose(on_gpu.cpu(), ds.render(idx), atol=1e-4)


def test_variant_options_are_checked() -> None:
    with pytest.raises(DatasetOptionError, match="nuisance must be one of fixed, fresh") as err:
        get_dataset("noisy_dsprites", nuisance="sometimes")
    assert err.value.option == "nuisance"
    with pytest.raises(DatasetOptionError, match="nuisance_seed"):
        get_dataset("random_color_dsprites", nuisance_seed=-1)
    with pytest.raises(DatasetOptionError, match="option 'photograph'"):
        get_dataset("noisy_dsprites", photograph="/x.jpg")


def test_bad_photographs_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "scream.jpg"
    with pytest.raises(FileNotFoundError, match=r"scream\.jpg' not found; expected a colour photo"):
        get_dataset("scream_dsprites", photograph=str(missing))
    missing.write_text("not a picture")
    with pytest.raises(DatasetFileError, match=r"scream\.jpg' is not a readable image"):
        get_dataset("scream_dsprites", photograph=str(missing))
    Image.fromarray(np.zeros((40, 1000, 3), np.uint8)).save(tmp_path / "strip.png")
    with pytest.raises(DatasetFileError, match=r"is 350 x 14, too small for 64 x 64 patches"):
        get_dataset("scream_dsprites", photograph=str(tmp_path / "strip.png"))


# --- the variants on the official dSprites file ---------------------------------------------


@pytest.fixture(scope="module")
def dsprites_npz(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A dSprites file in the official layout: a 0/1 square per row at its position."""
    n = 40
    classes = np.zeros((n, 6), dtype=np.int64)
    classes[:, 1:] = sample([3, 6, 40, 32, 32], n, 8)
    classes[:, 4] = np.arange(n) % 32  # distinct rows
    classes[:, 5] = np.arange(n) // 32
    imgs = np.zeros((n, 64, 64), dtype=np.uint8)
    for i, (_, _, scale, _, px, py) in enumerate(classes):
        side = 6 + 2 * scale
        imgs[i, 10 + py : 10 + py + side, 8 + px : 8 + px + side] = 1
    path = tmp_path_factory.mktemp("dsprites") / "dsprites.npz"
    np.savez(path, imgs=imgs, latents_classes=classes, latents_values=classes * 0.1)
    return path, classes


@pytest.mark.parametrize("name", VARIANTS)
def test_file_variants_draw_over_the_files_sprite(
    name: str, dsprites_npz: tuple[Path, np.ndarray]
) -> None:
    path, classes = dsprites_npz
    ds = get_dataset(f"{name}_file", path=str(path))
    mask = get_dataset("dsprites_file", path=str(path)).render(classes[:, 1:]).numpy()[:, 0]
    x = ds.render(classes[:, 1:]).numpy().astype(np.float64)
    assert x.shape == (40, 3, 64, 64) and ds.channels == 3
    assert describe(f"{name}_file").needs_file
    if name == "noisy_dsprites":
        assert np.all(x.transpose(1, 0, 2, 3)[:, mask == 1] == 1.0)
        assert x.transpose(1, 0, 2, 3)[:, mask == 0].max() < 1.0
    elif name == "random_color_dsprites":
        colour = x.max(axis=(2, 3))
        np.testing.assert_allclose(x, mask[:, None] * colour[:, :, None, None], atol=1e-6)
        assert colour.min() >= 0.5
    else:
        photo = ds.appearance.photo.astype(np.float64) / 255.0
        for i in range(0, 40, 8):
            check_scream(photo, x[i], mask[i])
    with pytest.raises(ValueError, match="holds no image"):
        ds.render(np.array([[2, 5, 39, 31, 31]]))


# --- SmallNORB ------------------------------------------------------------------------------


def write_norb(path: Path, array: np.ndarray, magic: int) -> None:
    """A NORB binary matrix: int32 magic, ndim, max(3, ndim) dims, then the elements."""
    dims = list(array.shape) + [1] * (3 - array.ndim)
    header = struct.pack(f"<ii{len(dims)}i", magic, array.ndim, *dims)
    dtype = "<i4" if magic == INT_MATRIX else "u1"
    data = header + np.ascontiguousarray(array, dtype=dtype).tobytes()
    with gzip.open(path, "wb") if path.suffix == ".gz" else open(path, "wb") as f:
        f.write(data)


# (category, instance, elevation, azimuth as the file gives it, lighting) per row. The first
# three rows share category, elevation, azimuth and lighting: instances 4 and 6 (training) and
# 0 (testing) of one combination.
TRAIN_ROWS = [
    (2, 4, 3, 10, 1),
    (2, 6, 3, 10, 1),
    (0, 7, 0, 0, 0),
    (4, 9, 8, 34, 5),
    (1, 8, 5, 2, 3),
]
TEST_ROWS = [(2, 0, 3, 10, 1), (3, 1, 2, 20, 4), (0, 5, 6, 16, 2)]


def norb_chunk(folder: Path, stem: str, rows: list, first_code: int, ext: str = ".mat") -> None:
    """Left images a constant ``code`` per row (the right ones ``255 - code``)."""
    n = len(rows)
    dat = np.zeros((n, 2, 96, 96), dtype=np.uint8)
    for i in range(n):
        dat[i, 0] = first_code + i
        dat[i, 1] = 255 - first_code - i
    table = np.asarray(rows, dtype=np.int32)
    write_norb(folder / f"{stem}-dat{ext}", dat, BYTE_MATRIX)
    write_norb(folder / f"{stem}-cat{ext}", table[:, 0], INT_MATRIX)
    write_norb(folder / f"{stem}-info{ext}", table[:, 1:], INT_MATRIX)


@pytest.fixture()
def norb(tmp_path: Path) -> Path:
    folder = tmp_path / "small_norb"
    folder.mkdir()
    norb_chunk(folder, TRAINING, TRAIN_ROWS, 10)
    norb_chunk(folder, TESTING, TEST_ROWS, 100)
    return folder


def norb_factors(row: tuple[int, ...]) -> list[int]:
    category, _, elevation, azimuth, lighting = row
    return [category, elevation, azimuth // 2, lighting]


def test_smallnorb_reads_the_left_image_of_each_combination(norb: Path, tmp_path: Path) -> None:
    ds = get_dataset("smallnorb_file", path=str(norb), cache_dir=str(tmp_path / "cache"))
    assert ds.factors.names == ["category", "elevation", "azimuth", "lighting"]
    assert ds.factors.sizes == [5, 9, 18, 6] and ds.channels == 1
    info = describe("smallnorb_file")
    assert info.total == 4860 and info.needs_file
    codes = {tuple(norb_factors(r)): [] for r in TRAIN_ROWS + TEST_ROWS}
    for rows, first in ((TRAIN_ROWS, 10), (TEST_ROWS, 100)):
        for i, r in enumerate(rows):
            codes[tuple(norb_factors(r))].append(first + i)
    idx = np.array(list(codes), dtype=np.int64)
    x = ds.render(idx).numpy()
    assert x.shape == (len(idx), 1, 64, 64)
    for image, combo in zip(x, codes, strict=True):
        assert np.ptp(image) == 0  # a constant image stays constant through Lanczos
        assert round(float(image[0, 0, 0]) * 255) in codes[combo]  # the left one
    assert ds.feasible(idx).all()
    if torch.cuda.is_available():  # the instance drawn on the GPU is the CPU's
        assert torch.equal(ds.render(torch.from_numpy(idx).cuda()).cpu(), ds.render(idx))
    absent = np.array([[1, 1, 1, 1]])
    assert not ds.feasible(absent).any()
    with pytest.raises(ValueError, match="holds no image"):
        ds.render(absent)


def test_smallnorb_instance_is_a_nuisance(norb: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    shared = np.array([norb_factors(TRAIN_ROWS[0])] * 600, dtype=np.int64)
    fresh = get_dataset("smallnorb_file", path=str(norb), cache_dir=cache, nuisance="fresh")
    torch.manual_seed(0)
    seen = np.round(fresh.render(shared).numpy()[:, 0, 0, 0] * 255).astype(int)
    values, counts = np.unique(seen, return_counts=True)
    assert values.tolist() == [10, 11, 100]  # instances 4, 6 and 0, a third each
    assert counts.min() > 150
    picks = set()
    for seed in range(40):
        fixed = get_dataset("smallnorb_file", path=str(norb), cache_dir=cache, nuisance_seed=seed)
        first = fixed.render(shared[:5]).numpy()[:, 0, 0, 0]
        assert np.ptp(first) == 0  # one instance per combination and seed
        picks.add(round(float(first[0]) * 255))
    assert picks == {10, 11, 100}


def test_smallnorb_resize_keeps_rows_and_columns(tmp_path: Path) -> None:
    folder = tmp_path / "norb"
    folder.mkdir()
    norb_chunk(folder, TRAINING, TRAIN_ROWS[2:3], 10)
    norb_chunk(folder, TESTING, TEST_ROWS[1:2], 100)
    raw = (folder / f"{TRAINING}-dat.mat").read_bytes()
    pattern = np.zeros((96, 96), dtype=np.uint8)
    pattern[:48] += 200  # top bright, then a brighter left half
    pattern[:, :48] += 30
    offset = 8 + 4 * 4
    image = np.frombuffer(raw[offset:], np.uint8).copy().reshape(1, 2, 96, 96)
    image[0, 0] = pattern
    (folder / f"{TRAINING}-dat.mat").write_bytes(raw[:offset] + image.tobytes())
    ds = get_dataset("smallnorb_file", path=str(folder), cache_dir=str(tmp_path / "c"))
    x = ds.render(np.array([norb_factors(TRAIN_ROWS[2])]))[0, 0].numpy() * 255
    np.testing.assert_allclose(
        [x[:28, :28].mean(), x[:28, 36:].mean(), x[36:, :28].mean(), x[36:, 36:].mean()],
        [230, 200, 30, 0],
        atol=1.0,
    )


def test_smallnorb_reads_gzipped_files_and_caches_once(norb: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plain = get_dataset("smallnorb_file", path=str(norb), cache_dir=str(cache))
    idx = np.array([norb_factors(r) for r in TRAIN_ROWS[2:] + TEST_ROWS[1:]])
    expected = plain.render(idx)
    assert len(list(cache.glob("*.npy"))) == 1
    get_dataset("smallnorb_file", path=str(norb), cache_dir=str(cache))
    assert len(list(cache.glob("*.npy"))) == 1  # reused
    for part in ("dat", "cat", "info"):
        (norb / f"{TESTING}-{part}.mat").unlink()
    norb_chunk(norb, TESTING, TEST_ROWS, 100, ext=".mat.gz")
    zipped = get_dataset("smallnorb_file", path=str(norb), cache_dir=str(cache))
    assert len(list(cache.glob("*.npy"))) == 2  # changed sources: converted again
    assert torch.equal(zipped.render(idx), expected)


def test_smallnorb_bad_files_are_named(norb: Path, tmp_path: Path) -> None:
    def load() -> None:
        get_dataset("smallnorb_file", path=str(norb), cache_dir=str(tmp_path / "cache"))

    with pytest.raises(FileNotFoundError, match="SmallNORB folder"):
        get_dataset("smallnorb_file", path=str(tmp_path / "nowhere"))
    info = norb / f"{TESTING}-info.mat"
    saved = info.read_bytes()
    info.unlink()
    with pytest.raises(FileNotFoundError, match=f"{TESTING}-info.mat' \\(or .gz\\) not found"):
        load()
    info.write_bytes(saved[:-4])
    with pytest.raises(DatasetFileError, match="truncated or corrupt"):
        load()
    info.write_bytes(struct.pack("<i", 0x12345678) + saved[4:])
    with pytest.raises(DatasetFileError, match="magic number 0x12345678 is not a NORB"):
        load()
    info.write_bytes(saved)
    dat = norb / f"{TRAINING}-dat.mat"
    write_norb(dat, np.zeros((5, 2, 96, 96), dtype=np.int32), INT_MATRIX)
    with pytest.raises(DatasetFileError, match=r"-dat\.mat' is a int32 matrix .* expected a uint8"):
        load()
    write_norb(dat, np.zeros((5, 2, 64, 64), dtype=np.uint8), BYTE_MATRIX)
    with pytest.raises(DatasetFileError, match=r"expected \(5, 2, 96, 96\)"):
        load()
    for rows, message in (
        ([*TRAIN_ROWS[:4], (1, 8, 5, 3, 3)], "azimuth 3, which is odd"),
        ([*TRAIN_ROWS[:4], (1, 8, 9, 2, 3)], "elevation index 9, outside 0..8"),
        ([*TRAIN_ROWS[:4], TEST_ROWS[1]], "appear in more than one row"),
    ):
        norb_chunk(norb, TRAINING, rows, 10)
        with pytest.raises(DatasetFileError, match=message):
            load()
    with pytest.raises(DatasetOptionError, match="nuisance must be"):
        get_dataset("smallnorb_file", path=str(norb), nuisance="random")


# --- Cars3D ---------------------------------------------------------------------------------


def write_car(path: Path, car_id: int, size: int = 64) -> None:
    """``im`` (size, size, 3, 24, 4): each image one colour, (10 id, 10 azimuth, 50 elev + 5)."""
    im = np.zeros((size, size, 3, 24, 4), dtype=np.uint8)
    im[:, :, 0] = 10 * car_id
    im[:, :, 1] = (10 * np.arange(24))[:, None]
    im[:, :, 2] = (50 * np.arange(4) + 5)[None, :]
    scipy.io.savemat(path, {"im": im})


@pytest.fixture()
def cars(tmp_path: Path) -> Path:
    folder = tmp_path / "cars"
    folder.mkdir()
    for car_id in (1, 10, 2):
        write_car(folder / f"car_{car_id:03d}_mesh.mat", car_id)
    (folder / "list.txt").write_text("not a car")
    return folder


def test_cars3d_factors_follow_the_files(cars: Path, tmp_path: Path) -> None:
    ds = get_dataset("cars3d_file", path=str(cars), num_cars=3, cache_dir=str(tmp_path / "c"))
    assert ds.factors.names == ["elevation", "azimuth", "object_type"]
    assert ds.factors.sizes == [4, 24, 3] and ds.channels == 3
    assert describe("cars3d_file").total == 4 * 24 * 183
    idx = np.stack(np.unravel_index(np.arange(288), (4, 24, 3)), axis=1)
    x = ds.render(idx).numpy()
    assert np.ptp(x, axis=(2, 3)).max() == 0  # constant images stay constant
    colour = np.round(x[:, :, 0, 0] * 255).astype(int)
    ids = np.array([1, 2, 10])  # object_type counts the files in sorted order
    np.testing.assert_array_equal(colour[:, 0], 10 * ids[idx[:, 2]])
    np.testing.assert_array_equal(colour[:, 1], 10 * idx[:, 1])
    np.testing.assert_array_equal(colour[:, 2], 50 * idx[:, 0] + 5)


def test_cars3d_resize_keeps_rows_and_columns(tmp_path: Path) -> None:
    folder = tmp_path / "one"
    folder.mkdir()
    im = np.zeros((128, 128, 3, 24, 4), dtype=np.uint8)
    im[:, :64, 0] = 200  # red on the left, green on top
    im[:64, :, 1] = 180
    scipy.io.savemat(folder / "car_001_mesh.mat", {"im": im})
    ds = get_dataset("cars3d_file", path=str(folder), num_cars=1, cache_dir=str(tmp_path / "c"))
    x = ds.render(np.array([[2, 7, 0]]))[0].numpy() * 255
    np.testing.assert_allclose([x[0, :, :28].mean(), x[0, :, 36:].mean()], [200, 0], atol=1.0)
    np.testing.assert_allclose([x[1, :28].mean(), x[1, 36:].mean()], [180, 0], atol=1.0)


def test_cars3d_bad_files_are_named(cars: Path, tmp_path: Path) -> None:
    def load(**options: object) -> None:
        get_dataset("cars3d_file", path=str(cars), cache_dir=str(tmp_path / "c"), **options)

    with pytest.raises(FileNotFoundError, match="Cars3D folder"):
        get_dataset("cars3d_file", path=str(tmp_path / "nowhere"))
    with pytest.raises(DatasetFileError, match=r"holds 3 car_\*_mesh\.mat files; expected 183"):
        load()
    bad = cars / "car_002_mesh.mat"
    scipy.io.savemat(bad, {"im": np.zeros((64, 64, 3, 24, 3), np.uint8)})
    with pytest.raises(DatasetFileError, match=r"002_mesh\.mat': im is uint8 \(64, 64, 3, 24, 3"):
        load(num_cars=3)
    scipy.io.savemat(bad, {"images": np.zeros((2, 2), np.uint8)})
    with pytest.raises(DatasetFileError, match="has no variable 'im'"):
        load(num_cars=3)
    bad.write_bytes(os.urandom(300))
    with pytest.raises(DatasetFileError, match="is not a readable MATLAB file"):
        load(num_cars=3)
    assert not list((tmp_path / "c").glob("*.npy"))  # nothing half-written is kept


# --- in a study -----------------------------------------------------------------------------


def test_a_study_names_them_on_its_dataset_axis(norb: Path, cars: Path, tmp_path: Path) -> None:
    spec = tmp_path / "locatello.yaml"
    spec.write_text(
        f"""
name: locatello_datasets
dataset: {{name: dsprites}}
split: iid
model: {{objective: beta_vae, architecture: conv, latent_dim: 10}}
train: {{steps: 10, batch_size: 8}}
evaluation: {{metrics: [mig], probes: []}}
grid:
  dataset:
    - {{name: random_color_dsprites}}
    - {{name: noisy_dsprites, options: {{nuisance: fresh}}}}
    - {{name: scream_dsprites}}
    - {{name: smallnorb_file, options: {{path: {norb}, cache_dir: {tmp_path / "c"}}}}}
    - {{name: cars3d_file, options: {{path: {cars}, num_cars: 3, cache_dir: {tmp_path / "c"}}}}}
  seed: [0]
resources: {{cpu: 1, gpu: 0}}
"""
    )
    assert load_spec(spec).num_trials() == 5
