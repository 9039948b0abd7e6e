"""Lazy access to the image arrays of official dataset files (``.npz`` and ``.h5``).

Large files are never read whole. An ``.npz`` is a zip of ``.npy`` files: a member stored
without compression (``np.savez``) is memory-mapped in place at its byte offset inside the
zip; a deflated member (``np.savez_compressed``, e.g. the official dSprites file) cannot be
mapped, so it is decompressed once, streamed in chunks, to an ``.npy`` in a cache folder and
that is mapped. An HDF5 dataset stored contiguously and uncompressed (the official 3dshapes
file) is memory-mapped at the offset h5py reports; a chunked or compressed one is read through
h5py, which reads only the requested rows.

Every failure raises :class:`DatasetFileError` (a ``ValueError``) or ``FileNotFoundError``
with the file's path and what was expected of it.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.data.core.files import DatasetFileError

_LOCAL_HEADER = b"PK\x03\x04"
_COPY_CHUNK = 64 << 20


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/raystudy`` (or ``~/.cache/raystudy``): decompressed npz members."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "raystudy"


# --- npz ---------------------------------------------------------------------------------


def open_npz(path: Path, expected: str) -> zipfile.ZipFile:
    """The ``.npz`` as a zip archive; DatasetFileError if it is not one."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DatasetFileError(
            f"{str(path)!r} is not a readable .npz archive ({exc}); expected {expected}"
        ) from None


def npz_members(path: Path, expected: str) -> list[str]:
    """Names of the arrays in an ``.npz`` (without the ``.npy`` suffix)."""
    with open_npz(path, expected) as zf:
        names = zf.namelist()
    return [n[: -len(".npy")] for n in names if n.endswith(".npy")]


def npz_small_array(path: Path, key: str, expected: str) -> Any:
    """Read one (small) member whole; never unpickles (see :func:`npz_pickled_object`)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return archive[key]
    except KeyError:
        raise DatasetFileError(f"{str(path)!r} has no array {key!r}; expected {expected}") from None
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise DatasetFileError(
            f"{str(path)!r}: cannot read array {key!r} ({exc}); expected {expected}"
        ) from None


# Globals a pickled numpy array of plain data may name (numpy 1 and 2 module paths): arrays,
# dtypes and scalars are rebuilt from bytes; nothing here runs code the file chooses.
_SAFE_PICKLE_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


class _DataUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings, numbers and numpy arrays only.

    ``np.load(allow_pickle=True)`` would call any function a file names (a crafted dataset
    file runs code on every node that opens it); this refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def npz_pickled_object(path: Path, key: str, expected: str) -> Any:
    """A pickled object-array member (dSprites' ``metadata``, a dict written by Python 2,
    decoded as latin1), unpickled by :class:`_DataUnpickler`: plain data or an error."""
    with open_npz(path, expected) as zf:
        info = _member(zf, path, key, expected)
        try:
            with zf.open(info) as member:
                data = io.BytesIO(member.read())
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
            raise DatasetFileError(f"{str(path)!r}: cannot read {key!r} ({exc})") from None
    _, _, dtype, _ = _read_npy_header(data, path, key, expected)
    if not dtype.hasobject:
        raise DatasetFileError(f"{str(path)!r}: {key!r} is not a pickled object ({expected})")
    try:
        return _DataUnpickler(data, encoding="latin1").load()
    except Exception as exc:  # any malformed or refused pickle is a bad file, nothing else
        raise DatasetFileError(
            f"{str(path)!r}: cannot unpickle {key!r} as plain data ({exc}); expected {expected}"
        ) from None


def npz_header(path: Path, key: str, expected: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Shape and dtype of an npz member, read from its ``.npy`` header only; a member whose
    size in the zip directory disagrees with its header (a truncated or padded array, which
    a memory map would read past or short of) is an error."""
    with open_npz(path, expected) as zf:
        info = _member(zf, path, key, expected)
        with zf.open(info) as member:
            shape, _, dtype, _ = _read_npy_header(member, path, key, expected)
            header_bytes = member.tell()
    if not dtype.hasobject:
        want = header_bytes + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if info.file_size != want:
            raise DatasetFileError(
                f"{str(path)!r}: array {key!r} holds {info.file_size - header_bytes} bytes of "
                f"data, but its header says {dtype} {shape}, which needs "
                f"{want - header_bytes}: the file is truncated or corrupt; expected {expected}"
            )
    return shape, dtype


def npz_head_rows(path: Path, key: str, n: int, expected: str) -> np.ndarray:
    """The first ``n`` rows of a C-ordered member, streamed (no full decompression)."""
    with open_npz(path, expected) as zf:
        info = _member(zf, path, key, expected)
        with zf.open(info) as member:
            shape, fortran, dtype, _ = _read_npy_header(member, path, key, expected)
            if fortran or not shape:
                return np.zeros((0,), dtype=dtype)
            rows = min(n, shape[0])
            row_items = int(np.prod(shape[1:], dtype=np.int64))
            data = member.read(rows * row_items * dtype.itemsize)
    return np.frombuffer(data, dtype=dtype).reshape((rows, *shape[1:]))


def npz_memmap(path: Path, key: str, expected: str, cache_dir: Path | None = None) -> np.ndarray:
    """A read-only memory map of member ``key`` (see the module docstring)."""
    with open_npz(path, expected) as zf:
        info = _member(zf, path, key, expected)
        if info.compress_type == zipfile.ZIP_STORED:
            with open(path, "rb") as f:
                f.seek(info.header_offset)
                local = f.read(30)
                if local[:4] != _LOCAL_HEADER:
                    raise DatasetFileError(f"{str(path)!r}: corrupt zip entry for {key!r}")
                name_len, extra_len = struct.unpack("<HH", local[26:30])
                f.seek(info.header_offset + 30 + name_len + extra_len)
                shape, fortran, dtype, version = _read_npy_header(f, path, key, expected)
                if version in ((1, 0), (2, 0)):
                    order = "F" if fortran else "C"
                    return np.memmap(path, dtype, "r", f.tell(), shape, order)
        # Deflated (or an unusual header): decompress once into the cache, then map that.
        cached = _cached_member(zf, info, path, key, cache_dir or default_cache_dir())
    return np.load(cached, mmap_mode="r")


def _member(zf: zipfile.ZipFile, path: Path, key: str, expected: str) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(f"{key}.npy")
    except KeyError:
        found = [n.removesuffix(".npy") for n in zf.namelist()]
        raise DatasetFileError(
            f"{str(path)!r} has no array {key!r} (it has {found}); expected {expected}"
        ) from None


def _read_npy_header(
    f: Any, path: Path, key: str, expected: str
) -> tuple[tuple[int, ...], bool, np.dtype[Any], tuple[int, int]]:
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            shape, fortran, dtype = np.lib.format._read_array_header(f, version)
    except ValueError as exc:
        raise DatasetFileError(
            f"{str(path)!r}: member {key!r} is not a .npy array ({exc}); expected {expected}"
        ) from None
    return shape, fortran, dtype, version


def _cached_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, key: str, cache_dir: Path
) -> Path:
    """The member's bytes (a complete ``.npy`` file) streamed to the cache, keyed by the
    source's name, size and mtime so a changed file is decompressed again."""
    stat = path.stat()
    cached = cache_dir / f"{path.stem}.{key}.{stat.st_size}.{stat.st_mtime_ns}.npy"
    if cached.is_file():
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".partial-{os.getpid()}")
    try:
        with zf.open(info) as src, open(partial, "wb") as dst:
            shutil.copyfileobj(src, dst, _COPY_CHUNK)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:  # e.g. "Bad CRC-32"
        partial.unlink(missing_ok=True)
        raise DatasetFileError(
            f"{str(path)!r}: member {key!r} does not decompress ({exc}): the file is corrupt"
        ) from None
    os.replace(partial, cached)  # atomic: a concurrent reader sees all of it or nothing
    return cached


# --- HDF5 --------------------------------------------------------------------------------


def _h5py() -> Any:
    """h5py, which only the HDF5 file datasets need (the `files` extra): a missing one is a
    DatasetFileError saying how to install it, when the spec that names such a file loads."""
    try:
        import h5py
    except ImportError:
        raise DatasetFileError(
            "reading an HDF5 dataset file (3dshapes' .h5) needs h5py, which raystudy installs "
            "only with its `files` extra: pip install 'raystudy[files]' (or pip install h5py)"
        ) from None
    return h5py


def h5_dataset_info(path: Path, key: str, expected: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Shape and dtype of an HDF5 dataset, without reading it."""
    h5py = _h5py()

    try:
        with h5py.File(path, "r") as f:
            if key not in f:
                raise DatasetFileError(
                    f"{str(path)!r} has no dataset {key!r} (it has {sorted(f.keys())}); "
                    f"expected {expected}"
                )
            if not isinstance(f[key], h5py.Dataset):
                raise DatasetFileError(
                    f"{str(path)!r}: {key!r} is an HDF5 group, not a dataset; expected {expected}"
                )
            return tuple(f[key].shape), f[key].dtype
    except OSError as exc:
        raise DatasetFileError(
            f"{str(path)!r} is not a readable HDF5 file ({exc}); expected {expected}"
        ) from None


def h5_read(path: Path, key: str) -> np.ndarray:
    """One whole (small) HDF5 dataset, e.g. 3dshapes' labels."""
    h5py = _h5py()

    with h5py.File(path, "r") as f:
        return np.asarray(f[key][()])


@dataclass
class H5Rows:
    """Row access to an HDF5 dataset: a memory map when it is contiguous and uncompressed,
    else h5py reads of the (sorted, unique) rows asked for."""

    path: Path
    key: str
    _map: np.ndarray | None = field(default=None, init=False, repr=False)
    _file: Any = field(default=None, init=False, repr=False)

    def read(self, rows: np.ndarray) -> np.ndarray:
        if self._map is None and self._file is None:
            self._open()
        if self._map is not None:
            return np.asarray(self._map[rows])
        unique, inverse = np.unique(rows, return_inverse=True)
        return np.asarray(self._file[self.key][unique])[inverse]

    def _open(self) -> None:
        f = _h5py().File(self.path, "r")
        dset = f[self.key]
        offset = dset.id.get_offset()
        if dset.chunks is None and dset.compression is None and offset is not None:
            self._map = np.memmap(self.path, dset.dtype, "r", offset, dset.shape)
            f.close()
        else:
            self._file = f

    def __getstate__(self) -> dict[str, Any]:
        # Handles and maps do not travel (e.g. to a Ray worker); they reopen on first read.
        return {"path": self.path, "key": self.key, "_map": None, "_file": None}


@dataclass
class NpzRows:
    """Row access to an ``.npz`` member through :func:`npz_memmap`, opened on first read."""

    path: Path
    key: str
    expected: str
    cache_dir: Path | None = None
    _map: np.ndarray | None = field(default=None, init=False, repr=False)

    def read(self, rows: np.ndarray) -> np.ndarray:
        if self._map is None:
            self._map = npz_memmap(self.path, self.key, self.expected, self.cache_dir)
        return np.asarray(self._map[rows])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_map"] = None
        return state
