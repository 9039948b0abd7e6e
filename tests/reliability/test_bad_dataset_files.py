"""Dataset files that are missing, truncated, corrupt, or hold the wrong keys, shapes or dtypes:
each is an error naming the file and the expected format, raised when the dataset is built (so
before a study starts), never a crash in a trial. tests/test_data_files.py covers the dSprites
and 3dshapes layouts; these are the cases it does not."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import fresh_ray
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.data import Split, get_dataset
from raystudy.data.core.files import DatasetFileError
from raystudy.data.core.registry import DatasetOptionError
from raystudy.spec import SpecError
from raystudy.study.folder import StudyError, StudyInfo, load_study_spec

DSPRITES_SIZES = (1, 3, 6, 40, 32, 32)
MPI_SIZES = (2, 1, 2, 1, 1, 2, 3)  # a 24-image row-major grid of the seven MPI3D factors
MPI_N = int(np.prod(MPI_SIZES))


def dsprites_arrays(n: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    flat = rng.choice(int(np.prod(DSPRITES_SIZES)), size=n, replace=False)
    classes = np.stack(np.unravel_index(flat, DSPRITES_SIZES), axis=1).astype(np.int64)
    imgs = rng.integers(0, 2, size=(n, 64, 64), dtype=np.uint8)  # random: compresses badly
    return {"imgs": imgs, "latents_classes": classes, "latents_values": classes / 10.0}


def shapes_labels(n: int) -> np.ndarray:
    values = [np.arange(10) / 10, np.arange(10) / 10, np.arange(10) / 10]
    values += [np.linspace(0.75, 1.25, 8), np.arange(4.0), np.linspace(-30, 30, 15)]
    return np.stack([v[np.arange(n) % len(v)] for v in values], axis=1)


def npy_bytes(array: np.ndarray, claimed_rows: int | None = None) -> bytes:
    """An .npy file; with `claimed_rows`, its header says that many rows whatever it holds."""
    buf = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    if claimed_rows is not None:
        header["shape"] = (claimed_rows, *array.shape[1:])
    np.lib.format.write_array_header_1_0(buf, header)
    buf.write(array.tobytes())
    return buf.getvalue()


def write_zip(path: Path, members: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compress) as zf:
        for name, data in members.items():
            zf.writestr(f"{name}.npy", data)
    return path


def build(name: str, path: Path, **options) -> None:
    """Build the dataset and render a few images: whatever fails must fail cleanly."""
    ds = get_dataset(name, path=str(path), **options)
    ds.render(Split("all", None, [], ds).sample("encoder", 4, 0))


# --- truncated and corrupt files ---------------------------------------------------------------


def _dsprites(path: Path) -> str:
    np.savez_compressed(path, **dsprites_arrays())
    return "dsprites_file"


def _mpi3d(path: Path) -> str:
    np.savez(path, images=np.zeros((MPI_N, 64, 64, 3), np.uint8))
    return "mpi3d_file"


def _shapes3d(path: Path) -> str:
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=np.zeros((40, 64, 64, 3), np.uint8))
        f.create_dataset("labels", data=shapes_labels(40))
    return "shapes3d_file"


@pytest.mark.parametrize("fraction", [0.02, 0.5, 0.98])
@pytest.mark.parametrize(
    ("writer", "suffix", "words"),
    [
        (_dsprites, "npz", "is not a readable .npz archive"),
        (_mpi3d, "npz", "is not a readable .npz archive"),
        (_shapes3d, "h5", "is not a readable HDF5 file"),
    ],
)
def test_a_truncated_download_is_named_when_the_dataset_is_built(
    tmp_path: Path, writer, suffix: str, words: str, fraction: float
) -> None:
    whole = tmp_path / f"whole.{suffix}"
    name = writer(whole)
    cut = tmp_path / f"cut.{suffix}"
    data = whole.read_bytes()
    cut.write_bytes(data[: int(len(data) * fraction)])
    options = {"factor_sizes": list(MPI_SIZES)} if name == "mpi3d_file" else {}
    with pytest.raises(DatasetFileError, match=rf"'{cut}' {words}") as info:
        build(name, cut, **options)
    assert "expected" in str(info.value)  # and says what the file should be


@pytest.mark.parametrize("name", ["dsprites_file", "mpi3d_file"])
def test_an_array_shorter_than_its_header_says_is_refused_before_it_is_mapped(
    tmp_path: Path, name: str
) -> None:
    # A zip whose directory is intact but whose image member stops short: a memory map would
    # read past it into the zip directory (or fail mid-trial); the header check catches it.
    path = tmp_path / "short.npz"
    if name == "dsprites_file":
        arrays = dsprites_arrays()
        members = {k: npy_bytes(v) for k, v in arrays.items()}
        members["imgs"] = npy_bytes(arrays["imgs"][:40], claimed_rows=64)
        key, options = "imgs", {}
    else:
        members = {"images": npy_bytes(np.zeros((MPI_N - 5, 64, 64, 3), np.uint8), MPI_N)}
        key, options = "images", {"factor_sizes": list(MPI_SIZES)}
    write_zip(path, members)
    with pytest.raises(DatasetFileError, match=rf"'{path}': array '{key}' holds .* truncated"):
        build(name, path, **options)


def test_a_corrupt_compressed_member_fails_cleanly_and_leaves_no_cache(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.npz"
    np.savez_compressed(path, **dsprites_arrays(n=200))
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("imgs.npy")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(int(info.compress_size * 0.8), int(info.compress_size * 0.8) + 64):
        data[start + i] ^= 0xFF  # late in the stream: the first rows still decompress
    path.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    ds = get_dataset("dsprites_file", path=str(path), cache_dir=str(cache))
    with pytest.raises(DatasetFileError, match=rf"'{path}': member 'imgs' does not decompress"):
        ds.render(Split("all", None, [], ds).sample("encoder", 4, 0))
    assert not list(cache.glob("*")), "a partial decompression was left in the cache"


# --- wrong keys, shapes and dtypes -------------------------------------------------------------


def mpi3d_file(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    ("arrays", "pattern"),
    [
        (
            {"imgs": np.zeros((MPI_N, 64, 64, 3), np.uint8)},
            r"has no array 'images' \(it has \['imgs'\]\); expected an MPI3D \.npz",
        ),
        (
            {"images": np.zeros((MPI_N, 64, 64, 3), np.float32)},
            r"images is float32 \(24, 64, 64, 3\); expected an MPI3D \.npz: "
            r"images \(24, 64, 64, 3\) uint8",
        ),
        (
            {"images": np.zeros((MPI_N, 64, 64), np.uint8)},
            r"images is uint8 \(24, 64, 64\); expected",
        ),
        ({"images": np.array([None] * MPI_N)}, r"images is object \(24,\); expected"),
    ],
)
def test_mpi3d_wrong_keys_dtypes_and_shapes(tmp_path: Path, arrays, pattern: str) -> None:
    path = mpi3d_file(tmp_path / "mpi3d_toy.npz", **arrays)
    with pytest.raises(DatasetFileError, match=rf"'{path}'.*{pattern}"):
        build("mpi3d_file", path, factor_sizes=list(MPI_SIZES))


def test_mpi3d_real_file_is_checked_like_the_sim_one(tmp_path: Path) -> None:
    sim = mpi3d_file(tmp_path / "toy.npz", images=np.zeros((MPI_N, 64, 64, 3), np.uint8))
    real = mpi3d_file(tmp_path / "real.npz", images=np.zeros((MPI_N, 32, 32, 3), np.uint8))
    with pytest.raises(DatasetFileError, match=rf"'{real}': images is uint8 \(24, 32, 32, 3\)"):
        build("mpi3d_file", sim, real_path=str(real), factor_sizes=list(MPI_SIZES))


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"latents_classes": None}, r"has no array 'latents_classes'"),
        ({"latents_values": None}, r"has no array 'latents_values'"),
        ({"latents_classes": np.zeros((64, 6))}, r"latents_classes is float64 \(64, 6\); expected"),
        (
            {"latents_classes": np.zeros((63, 6), np.int64)},
            r"latents_classes is int64 \(63, 6\); expected \(64, 6\) integers, one row per image",
        ),
        (
            # An object array is a pickle: refused unread, not unpickled.
            {"latents_classes": np.array([None] * 64)},
            r"cannot read array 'latents_classes' \(Object arrays cannot be loaded",
        ),
        ({"metadata": np.arange(3)}, r"'metadata' is not a pickled object"),
    ],
)
def test_dsprites_wrong_keys_dtypes_and_shapes(tmp_path: Path, change, pattern: str) -> None:
    arrays = {**dsprites_arrays(), **change}
    path = tmp_path / "dsprites.npz"
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    with pytest.raises(DatasetFileError, match=rf"'{path}'.*{pattern}") as info:
        build("dsprites_file", path)
    assert "the dSprites .npz" in str(info.value)


@pytest.mark.parametrize(
    ("layout", "pattern"),
    [
        ({"labels": shapes_labels(8).astype(np.int64)}, r"labels is int64 \(8, 6\); expected"),
        ({"labels": shapes_labels(9)}, r"labels is float64 \(9, 6\); expected \(8, 6\)"),
        ({"labels": shapes_labels(8)[:, :5]}, r"labels is float64 \(8, 5\); expected \(8, 6\)"),
        ({"labels": "group"}, r"'labels' is an HDF5 group, not a dataset"),
        ({"images": "group"}, r"'images' is an HDF5 group, not a dataset"),
    ],
)
def test_shapes3d_wrong_dtypes_shapes_and_kinds(tmp_path: Path, layout, pattern: str) -> None:
    path = tmp_path / "3dshapes.h5"
    content = {"images": np.zeros((8, 64, 64, 3), np.uint8), "labels": shapes_labels(8), **layout}
    with h5py.File(path, "w") as f:
        for key, value in content.items():
            if isinstance(value, str):
                f.create_group(key)
            else:
                f.create_dataset(key, data=value)
    with pytest.raises(DatasetFileError, match=rf"'{path}'.*{pattern}"):
        build("shapes3d_file", path)


@pytest.mark.parametrize(
    ("name", "options", "pattern"),
    [
        ("dsprites_file", {"path": 3}, r"option 'path' must be a path \(string\), got 3"),
        ("shapes3d_file", {"path": None}, r"option 'path' must be a path \(string\), got None"),
        (
            "mpi3d_file",
            {"path": "x.npz", "factor_sizes": "2,3"},
            r"option 'factor_sizes' must be a list of integers or null, got '2,3'",
        ),
        (
            "dsprites_file",
            {"path": "x.npz", "cache": "/tmp"},
            r"unknown option 'cache'; allowed: cache_dir, path \(did you mean 'cache_dir'\?\)",
        ),
    ],
)
def test_options_of_the_wrong_type_are_named(name: str, options, pattern: str) -> None:
    with pytest.raises(DatasetOptionError, match=rf"^dataset '{name}': {pattern}"):
        get_dataset(name, **options)


def test_a_folder_where_a_file_belongs_is_not_found(tmp_path: Path) -> None:
    folder = tmp_path / "dsprites.npz"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match=rf"'{folder}' not found; expected the dSprites"):
        get_dataset("dsprites_file", path=str(folder))


# --- through a study spec: refused before Ray, at the option that names the file -------------


def test_a_study_on_a_bad_file_fails_at_its_option_before_any_trial(tmp_path: Path) -> None:
    good = mpi3d_file(tmp_path / "toy.npz", images=np.zeros((MPI_N, 64, 64, 3), np.uint8))
    bad = tmp_path / "real.npz"
    bad.write_bytes(good.read_bytes()[:1000])  # a truncated download
    spec = tmp_path / "study.yaml"
    sizes = list(MPI_SIZES)
    spec.write_text(
        "name: s\nsplit: iid\n"
        f"dataset: {{name: mpi3d_file, options: {{path: {good}, factor_sizes: {sizes}}}}}\n"
        # In a grid a list is an axis: a list-valued option is written as a list of lists.
        "grid:\n  dataset:\n"
        f"    - {{name: mpi3d_file, options: {{path: {good}, factor_sizes: [{sizes}]}}}}\n"
        f"    - {{name: mpi3d_file, options: {{path: {good}, real_path: {bad}, "
        f"factor_sizes: [{sizes}]}}}}\n"
    )
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"{spec}: grid point 1 (" in message and "-> dataset.options.real_path: " in message
    assert f"'{bad}' is not a readable .npz archive" in message
    # The good point alone is a valid study.
    assert load_spec(spec, ["grid={seed: [0]}"]).dataset.options["path"] == str(good)


@pytest.mark.parametrize("option", ["path", "real_path", "cache_dir"])
def test_a_relative_file_path_is_refused_though_it_exists_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    # Found from the folder the study starts in, then not from any trial's working folder.
    monkeypatch.chdir(tmp_path)
    _mpi3d(tmp_path / "d.npz")
    (tmp_path / "cache").mkdir()
    relative = {"path": "d.npz", "real_path": "d.npz", "cache_dir": "cache"}
    options = {k: str(tmp_path / v) for k, v in relative.items()}
    options[option] = relative[option]
    spec = tmp_path / "study.yaml"

    def write() -> None:
        shown = ", ".join(f"{k}: {v}" for k, v in options.items())
        sizes = list(MPI_SIZES)
        spec.write_text(
            "name: s\nsplit: iid\n"
            f"dataset: {{name: mpi3d_file, options: {{{shown}, factor_sizes: {sizes}}}}}\n"
        )

    write()
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"{spec}: dataset.options.{option}: '{relative[option]}' is a relative path" in message
    assert "working folder of its own" in message
    assert f"e.g. '{tmp_path / relative[option]}'" in message
    # Written as the message suggests, the study loads.
    options[option] = str(tmp_path / relative[option])
    write()
    assert load_spec(spec).dataset.options[option] == options[option]


def test_resume_checks_the_files_again_but_reading_results_needs_none(tmp_path: Path) -> None:
    import ray

    study_dir = tmp_path / "s"
    study_dir.mkdir()
    gone = tmp_path / "moved.npz"
    (study_dir / "spec.yaml").write_text(
        f"name: s\nsplit: iid\ndataset: {{name: dsprites_file, options: {{path: {gone}}}}}\n"
    )
    StudyInfo("s", study_dir, f"sqlite:///{tmp_path / 'unused.db'}", "0", "run", 1).write()
    # Reading a finished study's results (analyze, status) needs no dataset file...
    assert load_study_spec(study_dir).dataset.options["path"] == str(gone)
    # ...resuming runs trials, which do: refused before Ray, naming the file and the field.
    with pytest.raises(StudyError, match=rf"dataset\.options\.path: dataset file '{gone}'"):
        load_study_spec(study_dir, check_data=True)
    fresh_ray()  # a shared test cluster of an earlier module in this process
    result = CliRunner().invoke(app, ["resume", "s", "--output", str(tmp_path)])
    assert result.exit_code == 2 and "not found" in result.output, result.output
    assert not ray.is_initialized()
