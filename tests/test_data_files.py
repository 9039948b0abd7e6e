"""File datasets on small files written here in the official formats, and their errors."""

from __future__ import annotations

import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from raystudy.data import Split, get_dataset, get_split
from raystudy.data.core.files import DatasetFileError

DSPRITES_SIZES = (1, 3, 6, 40, 32, 32)
SHAPES_VALUES = [
    np.round(np.arange(10) / 10, 1),
    np.round(np.arange(10) / 10, 1),
    np.round(np.arange(10) / 10, 1),
    np.linspace(0.75, 1.25, 8),
    np.arange(4.0),
    np.linspace(-30, 30, 15),
]
MPI_SIZES = (2, 3, 2, 1, 2, 3, 4)  # a small row-major grid of the seven MPI3D factors


def distinct_rows(sizes: tuple[int, ...], n: int, seed: int) -> np.ndarray:
    """``n`` distinct factor combinations in random order (a file need not be sorted)."""
    rng = np.random.default_rng(seed)
    flat = rng.choice(int(np.prod(sizes)), size=n, replace=False)
    return np.stack(np.unravel_index(flat, sizes), axis=1).astype(np.int64)


def write_dsprites(path: Path, n: int = 300, compressed: bool = True, **overrides) -> dict:
    """A dSprites file: images are a pattern of the row's classes, values 0/1."""
    classes = distinct_rows(DSPRITES_SIZES, n, 0)
    imgs = np.zeros((n, 64, 64), dtype=np.uint8)
    for k in range(6):  # one column per class value: bits along a row of pixels
        imgs[np.arange(n), k, classes[:, k] % 64] = 1
    values = classes.astype(np.float64) / 10.0
    metadata = np.array(
        {"latents_sizes": np.array(DSPRITES_SIZES), "latents_names": ("color", "shape")},
        dtype=object,
    )
    arrays = {
        "imgs": imgs,
        "latents_classes": classes,
        "latents_values": values,
        "metadata": metadata,
    }
    arrays.update(overrides)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return arrays


def write_shapes(path: Path, n: int = 200, chunked: bool = False, labels=None) -> dict:
    classes = distinct_rows((10, 10, 10, 8, 4, 15), n, 1)
    if labels is None:
        labels = np.stack([SHAPES_VALUES[k][classes[:, k]] for k in range(6)], axis=1)
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, size=(n, 64, 64, 3), dtype=np.uint8)
    with h5py.File(path, "w") as f:
        if chunked:
            f.create_dataset("images", data=images, chunks=(8, 64, 64, 3), compression="gzip")
        else:
            f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    return {"images": images, "labels": labels, "classes": classes}


def mpi_pattern(n: int, offset: int = 0) -> np.ndarray:
    """Row ``i`` carries ``i`` in its first two bytes (so the row read back is visible)."""
    images = np.zeros((n, 64, 64, 3), dtype=np.uint8)
    rows = np.arange(n) + offset
    images[:, 0, 0, 0] = rows % 256
    images[:, 0, 0, 1] = rows // 256
    return images


# --- dSprites ----------------------------------------------------------------------------------


@pytest.mark.parametrize("compressed", [True, False])
def test_dsprites_file_renders_its_rows(tmp_path: Path, compressed: bool) -> None:
    path = tmp_path / "dsprites.npz"
    arrays = write_dsprites(path, compressed=compressed)
    ds = get_dataset("dsprites_file", path=str(path), cache_dir=str(tmp_path / "cache"))
    assert ds.factors.names == get_dataset("dsprites").factors.names
    assert ds.factors.sizes == [3, 6, 40, 32, 32] and ds.channels == 1
    rows = np.array([5, 0, 299, 5, 17])
    idx = arrays["latents_classes"][rows, 1:]
    x = ds.render(idx)
    assert x.shape == (5, 1, 64, 64) and x.dtype == torch.float32
    assert torch.equal(x[:, 0], torch.from_numpy(arrays["imgs"][rows]).float())
    cached = list((tmp_path / "cache").glob("*.npy"))
    # Deflated (the official file) is decompressed once into the cache; stored is mapped.
    assert len(cached) == (1 if compressed else 0)
    assert isinstance(ds._readers["sim"]._map, np.memmap)


def test_dsprites_file_feasible_is_what_the_file_holds(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    arrays = write_dsprites(path, compressed=False)
    ds = get_dataset("dsprites_file", path=str(path))

    def position(rows: np.ndarray) -> np.ndarray:  # row-major over (3, 6, 40, 32, 32)
        out = np.zeros(len(rows), dtype=np.int64)
        for k, size in enumerate(DSPRITES_SIZES[1:]):
            out = out * size + rows[:, k]
        return out

    held = position(arrays["latents_classes"][:, 1:])
    probe = ds.factors.sample(20_000, np.random.default_rng(0))
    probe = np.concatenate([probe, arrays["latents_classes"][:, 1:]])
    want = np.isin(position(probe), held)
    assert np.array_equal(ds.feasible(probe).numpy(), want)
    # Splits sample only combinations the file has, inside their set.
    split = get_split("schott_extrapolation", ds)
    x = split.sample("encoder", 2_000, 0)
    assert np.isin(position(x), held).all()
    assert ds.render(x[:64]).shape == (64, 1, 64, 64)
    missing = probe[~want][:1]
    with pytest.raises(ValueError, match=r"d\.npz' holds no image for \{'shape': \d+, 'scale'"):
        ds.render(missing)


def test_dsprites_cache_is_reused(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    write_dsprites(path)
    cache = tmp_path / "cache"
    first = get_dataset("dsprites_file", path=str(path), cache_dir=str(cache))
    idx = np.array([[0, 0, 0, 0, 0]])
    first.feasible(idx)
    x = first.render(first._readers["sim"] and _some_rows(first))
    (cached,) = cache.glob("*.npy")
    stamp = cached.stat().st_mtime_ns
    second = get_dataset("dsprites_file", path=str(path), cache_dir=str(cache))
    assert torch.equal(second.render(_some_rows(second)), x)
    assert cached.stat().st_mtime_ns == stamp


def _some_rows(ds) -> np.ndarray:
    return Split("all", None, [], ds).sample("encoder", 8, 0)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"imgs": None}, r"has no array 'imgs' \(it has \[.*\]\); expected the dSprites"),
        (
            {"imgs": np.zeros((300, 64, 64), np.float32)},
            r"imgs is float32 .*expected \(N, 64, 64\)",
        ),
        ({"imgs": np.zeros((300, 32, 32), np.uint8)}, r"imgs is uint8 \(300, 32, 32\)"),
        (
            {"imgs": np.full((300, 64, 64), 255, np.uint8)},
            r"imgs has values up to 255; expected 0/1",
        ),
        ({"latents_classes": np.zeros((300, 5), np.int64)}, r"latents_classes is int64 \(300, 5\)"),
        ({"latents_classes": np.zeros((300, 6), np.int64)}, r"appear in more than one row"),
        (
            {"metadata": np.array({"latents_sizes": np.array([1, 3, 6, 40, 32, 33])})},
            r"latents_sizes \[.*33\] differ from the dSprites grid",
        ),
    ],
)
def test_dsprites_file_errors_name_file_and_format(tmp_path: Path, change, pattern) -> None:
    path = tmp_path / "bad.npz"
    write_dsprites(path, **change)
    with pytest.raises(DatasetFileError, match=pattern) as info:
        get_dataset("dsprites_file", path=str(path))
    assert "bad.npz" in str(info.value)


def test_classes_out_of_range_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.npz"
    classes = distinct_rows(DSPRITES_SIZES, 300, 0)
    classes[7, 4] = 32
    write_dsprites(path, latents_classes=classes)
    with pytest.raises(DatasetFileError, match=r"row 7 has pos_x index 32, outside 0\.\.31"):
        get_dataset("dsprites_file", path=str(path))


def test_missing_and_non_npz_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"'.*nope\.npz' not found; expected the dSprites"):
        get_dataset("dsprites_file", path=str(tmp_path / "nope.npz"))
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(DatasetFileError, match=r"junk\.npz' is not a readable \.npz archive"):
        get_dataset("dsprites_file", path=str(junk))


# --- 3dshapes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
def test_shapes3d_file_renders_its_rows(tmp_path: Path, chunked: bool) -> None:
    path = tmp_path / "3dshapes.h5"
    data = write_shapes(path, chunked=chunked)
    ds = get_dataset("shapes3d_file", path=str(path))
    assert ds.factors.names == get_dataset("shapes3d").factors.names
    rows = np.array([3, 199, 3, 0, 42])  # repeated and unsorted rows
    x = ds.render(data["classes"][rows])
    assert x.shape == (5, 3, 64, 64)
    want = torch.from_numpy(data["images"][rows]).permute(0, 3, 1, 2).float() / 255.0
    assert torch.allclose(x, want)
    reader = ds._readers["sim"]
    # Contiguous (as official): a memory map; chunked and gzipped: h5py reads.
    assert isinstance(reader._map, np.memmap) is (not chunked)
    assert float(ds.feasible(data["classes"]).float().mean()) == 1.0


def test_shapes3d_labels_off_the_grid_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.h5"
    classes = distinct_rows((10, 10, 10, 8, 4, 15), 50, 1)
    labels = np.stack([SHAPES_VALUES[k][classes[:, k]] for k in range(6)], axis=1)
    labels[9, 3] = 0.8  # between two scales
    write_shapes(path, n=50, labels=labels)
    with pytest.raises(DatasetFileError, match=r"labels row 9 has scale = 0\.8, not one of"):
        get_dataset("shapes3d_file", path=str(path))


def test_shapes3d_wrong_layout_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=np.zeros((4, 64, 64), np.uint8))
        f.create_dataset("labels", data=np.zeros((4, 6)))
    with pytest.raises(DatasetFileError, match=r"images is uint8 \(4, 64, 64\); expected"):
        get_dataset("shapes3d_file", path=str(path))
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=np.zeros((4, 64, 64, 3), np.uint8))
    with pytest.raises(DatasetFileError, match=r"has no dataset 'labels' \(it has \['images'\]\)"):
        get_dataset("shapes3d_file", path=str(path))
    (tmp_path / "text.h5").write_text("hello")
    with pytest.raises(DatasetFileError, match=r"not a readable HDF5 file"):
        get_dataset("shapes3d_file", path=str(tmp_path / "text.h5"))


# --- MPI3D -------------------------------------------------------------------------------------


@pytest.fixture()
def mpi_files(tmp_path: Path) -> tuple[Path, Path]:
    n = int(np.prod(MPI_SIZES))
    sim, real = tmp_path / "mpi3d_toy.npz", tmp_path / "mpi3d_real.npz"
    np.savez(sim, images=mpi_pattern(n))
    np.savez_compressed(real, images=mpi_pattern(n, offset=1000))
    return sim, real


def test_mpi3d_rows_are_row_major_over_the_factors(mpi_files, tmp_path: Path) -> None:
    sim, real = mpi_files
    ds = get_dataset(
        "mpi3d_file",
        path=str(sim),
        real_path=str(real),
        factor_sizes=list(MPI_SIZES),
        cache_dir=str(tmp_path / "cache"),
    )
    assert ds.factors.names == [
        "object_color",
        "object_shape",
        "object_size",
        "camera_height",
        "background_color",
        "horizontal_axis",
        "vertical_axis",
    ]
    assert ds.domains == ("sim", "real")
    idx = Split("all", None, [], ds).sample("encoder", 50, 0)
    # Row-major: the last factor varies fastest (written out, not via numpy's ravel).
    want = np.zeros(50, dtype=np.int64)
    for k, size in enumerate(MPI_SIZES):
        want = want * size + idx[:, k]
    for domain, offset in (("sim", 0), ("real", 1000)):
        x = ds.render(idx, domain=domain)
        got = np.rint(x[:, 0, 0, 0].numpy() * 255) + 256 * np.rint(x[:, 1, 0, 0].numpy() * 255)
        assert np.array_equal(got.astype(np.int64), want + offset)


def test_mpi3d_needs_the_official_row_count(mpi_files) -> None:
    sim, _ = mpi_files
    with pytest.raises(
        DatasetFileError,
        match=r"images is uint8 \(288, 64, 64, 3\); expected .*"
        r"\(1036800, 64, 64, 3\) uint8, rows in row-major order over "
        r"\(6, 6, 2, 3, 3, 40, 40\) = object_color",
    ):
        get_dataset("mpi3d_file", path=str(sim))
    with pytest.raises(FileNotFoundError, match=r"mpi3d_nope\.npz' not found; expected an MPI3D"):
        get_dataset(
            "mpi3d_file",
            path=str(sim),
            real_path=str(sim.parent / "mpi3d_nope.npz"),
            factor_sizes=list(MPI_SIZES),
        )
    with pytest.raises(ValueError, match="factor_sizes must be 7 positive sizes"):
        get_dataset("mpi3d_file", path=str(sim), factor_sizes=[2, 3])


def test_schott_splits_apply_to_mpi3d_files(mpi_files) -> None:
    sim, _ = mpi_files
    ds = get_dataset("mpi3d_file", path=str(sim), factor_sizes=list(MPI_SIZES))
    split = get_split("schott_extrapolation", ds)
    x = split.sample("heldout", 500, 0)
    # r = 0.1 holds out the top ceil(0.1 n) of each split factor (shape and size kept whole).
    # Here n = 2, 1, 2, 3, 4: the top index of each, except camera_height, whose single value
    # cannot be split (it is kept whole).
    top = {"object_color": 1, "background_color": 1, "horizontal_axis": 2, "vertical_axis": 3}
    held = np.zeros(500, dtype=bool)
    for name, first in top.items():
        held |= x[:, ds.factors.index(name)] >= first
    assert held.all()
    assert split.mask("encoder", x).sum() == 0
    train = split.sample("encoder", 500, 1)
    for name, first in top.items():
        assert train[:, ds.factors.index(name)].max() == first - 1


def test_file_datasets_pickle_without_their_data(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    write_dsprites(path, compressed=False)
    ds = get_dataset("dsprites_file", path=str(path))
    idx = _some_rows(ds)
    before = ds.render(idx)
    blob = pickle.dumps(ds)
    assert len(blob) < 7_000_000  # the lookup table (5.9 MB), not the images
    again = pickle.loads(blob)
    assert again._readers["sim"]._map is None
    assert torch.equal(again.render(idx), before)


def test_npz_members_are_what_numpy_writes(tmp_path: Path) -> None:
    # The two layouts the loader distinguishes, as numpy produces them.
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, x=np.zeros(3))
    np.savez_compressed(b, x=np.zeros(3))
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        assert za.getinfo("x.npy").compress_type == zipfile.ZIP_STORED
        assert zb.getinfo("x.npy").compress_type == zipfile.ZIP_DEFLATED


def test_without_h5py_an_hdf5_file_says_which_extra_reads_it(tmp_path: Path) -> None:
    """h5py is the `files` extra's: a process without it (here, one where importing it fails,
    as on an install without the extra) is told so by the spec's dataset, not by a traceback;
    the .npz datasets load there."""
    path = tmp_path / "3dshapes.h5"
    write_shapes(path, n=20)
    npz = tmp_path / "dsprites.npz"
    write_dsprites(npz)
    script = f"""
import sys
sys.modules["h5py"] = None  # `import h5py` raises ImportError, as where it is not installed
from raystudy.data import get_dataset
from raystudy.data.core.files import DatasetFileError
get_dataset("dsprites_file", path={str(npz)!r})
try:
    get_dataset("shapes3d_file", path={str(path)!r})
except DatasetFileError as exc:
    print(exc)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "needs h5py" in done.stdout and "pip install 'raystudy[files]'" in done.stdout
