"""Splits as files of dataset indices: the train and test sets of a split read from the files a
user supplies (:func:`read_split_indices`, behind the ``schott_*`` splits' options), and a
split's written out (:func:`write_split_indices`), e.g. to run raystudy's Schott splits
elsewhere or to pin them.

What is read (``split: {name: schott_composition, options: {...}}`` in a study YAML):

- ``index_file: /path/split.npz``: one ``.npz`` with members ``train`` and ``test`` (or
  ``train_indices`` and ``test_indices``), as :func:`write_split_indices` writes it;
- ``train_file: /path/a`` and ``test_file: /path/b``: each a ``.npy`` array, or a ``.npz``
  holding exactly one array. Schott et al. (2022) publish their splits this way
  (github.com/bethgelab/InDomainGeneralizationBenchmark; ``<dataset>_<split>_train_labels.npz``
  and ``..._test_labels.npz``, one member ``arr_0``).

Each array holds integers, in one of two layouts: 1-D, flat row-major positions in the
dataset's factor grid (``numpy.ravel_multi_index(factors, sizes)``); or 2-D ``(N, K)``, one row
of factor indices per image, the ``K`` factors in the dataset's order (the published
``*_labels.npz`` files). A set must be non-empty, in range and free of repeats, and the train
and test sets disjoint; they need not cover the grid. A file written by
:func:`write_split_indices` also holds ``factor_sizes`` (and ``factor_names``), checked
against the dataset. Paths must be absolute (``~`` is expanded): every trial runs in a
working folder of its own. Every error names the file, the member and what is allowed.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.data.core.factors import FactorSpace
from raystudy.data.splits.registry import SplitOptionError
from raystudy.data.splits.split import Split

#: The split options that name index files.
FILE_OPTIONS = ("index_file", "train_file", "test_file")
MEMBERS = {"train": ("train", "train_indices"), "test": ("test", "test_indices")}
_CHUNK = 1 << 20


def read_split_indices(
    space: FactorSpace, options: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """The train and test sets of ``options`` (see the module docstring) as sorted flat grid
    positions (int64); :class:`SplitOptionError` naming the option for anything wrong."""
    given = [o for o in FILE_OPTIONS if options.get(o) is not None]
    if given == ["index_file"]:
        path = _path(options["index_file"], "index_file")
        arrays = _load(path, "index_file")
        _check_sizes(arrays, space, path, "index_file")
        found = [(part, *_member(arrays, part, path), "index_file") for part in ("train", "test")]
    elif sorted(given) == ["test_file", "train_file"]:
        found = []
        for part in ("train", "test"):
            option = f"{part}_file"
            path = _path(options[option], option)
            arrays = _load(path, option)
            _check_sizes(arrays, space, path, option)
            own = [k for k in arrays if k not in ("factor_sizes", "factor_names")]
            if len(own) != 1:
                raise SplitOptionError(
                    f"{path}: holds members {own}; allowed: a .npy array, or a .npz with "
                    f"exactly one array of {part} indices",
                    option,
                )
            found.append((part, own[0], arrays[own[0]], option))
    else:
        raise SplitOptionError(
            f"split index files: got {given or 'none'}; allowed: index_file (one .npz with "
            "train and test), or train_file and test_file together",
            given[0] if given else None,
        )
    flat = {}
    for part, member, array, option in found:
        where = f"{_shown(options[option])}: member {member!r}"
        flat[part] = (_flat_positions(array, space, where, option), where, option)
    (train, _, _), (test, test_at, test_option) = flat["train"], flat["test"]
    shared = np.intersect1d(train, test, assume_unique=True)
    if shared.size:
        raise SplitOptionError(
            f"{test_at}: {shared.size} combinations are also in the train set (e.g. "
            f"{_combination(int(shared[0]), space)}); allowed: disjoint train and test sets",
            test_option,
        )
    return train, test


def write_split_indices(split: Split, path: str | os.PathLike[str]) -> Path:
    """Write ``split``'s encoder set as ``train`` and its ``heldout`` set as ``test`` (flat
    row-major grid positions, int64, sorted), with ``factor_names`` and ``factor_sizes``, to
    the ``.npz`` ``path``; returns it. Read back by the ``index_file`` option of a
    ``schott_*`` split, it gives the same sets."""
    out = Path(path).expanduser()
    if out.suffix != ".npz":
        raise ValueError(f"{out}: a split is written as .npz; give a path ending in .npz")
    if "heldout" not in split.roles:
        raise ValueError(
            f"split {split.name!r} has no heldout set to write as the test set "
            f"(its roles: {', '.join(split.roles)})"
        )
    space = split.dataset.factors
    np.savez_compressed(
        out,
        train=_positions_of(split, "encoder"),
        test=_positions_of(split, "heldout"),
        factor_names=np.array(space.names),
        factor_sizes=np.array(space.sizes, dtype=np.int64),
    )
    return out


def _positions_of(split: Split, role: str) -> np.ndarray:
    """The flat grid positions in the role's set, the whole grid scanned in chunks."""
    space = split.dataset.factors
    kept = []
    for start in range(0, space.total, _CHUNK):
        flat = np.arange(start, min(start + _CHUNK, space.total), dtype=np.int64)
        idx = np.stack(np.unravel_index(flat, space.sizes), axis=1)
        kept.append(flat[split.mask(role, idx)])
    return np.concatenate(kept)


def _path(value: Any, option: str) -> Path:
    if not isinstance(value, str | os.PathLike):
        raise SplitOptionError(
            f"{option}: expected a path to a .npz or .npy file, got {value!r}", option
        )
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise SplitOptionError(
            f"{option}: {str(value)!r} is a relative path; each trial runs in a working folder "
            "of its own, so give an absolute path (or one starting with ~)",
            option,
        )
    if not path.is_file():
        raise SplitOptionError(f"{option}: split index file {str(path)!r} not found", option)
    return path


def _load(path: Path, option: str) -> dict[str, np.ndarray]:
    """The arrays of a ``.npy`` (one, named ``arr_0``) or a ``.npz``, read in full."""
    allowed = "allowed: a .npy array or a .npz of integer arrays"
    try:
        if zipfile.is_zipfile(path):
            with np.load(path, allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        return {"arr_0": np.load(path, allow_pickle=False)}
    except ValueError as exc:
        # numpy refuses object arrays without pickle: strings, ragged lists.
        raise SplitOptionError(f"{path}: {exc}; {allowed}", option) from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise SplitOptionError(
            f"{path}: not readable as .npy or .npz ({exc}); {allowed}", option
        ) from None


def _member(arrays: dict[str, np.ndarray], part: str, path: Path) -> tuple[str, np.ndarray]:
    for name in MEMBERS[part]:
        if name in arrays:
            return name, arrays[name]
    raise SplitOptionError(
        f"{path}: no member {' or '.join(repr(m) for m in MEMBERS[part])} (it holds "
        f"{', '.join(repr(k) for k in arrays) or 'nothing'}); allowed: members train and test, "
        "or train_indices and test_indices",
        "index_file",
    )


def _check_sizes(
    arrays: dict[str, np.ndarray], space: FactorSpace, path: Path, option: str
) -> None:
    sizes = arrays.pop("factor_sizes", None)
    arrays.pop("factor_names", None)
    if sizes is not None and [int(s) for s in np.ravel(sizes)] != list(space.sizes):
        raise SplitOptionError(
            f"{path}: member 'factor_sizes' is {np.ravel(sizes).tolist()}, but the dataset's "
            f"factor grid is {_grid(space)}: the file was "
            "written for another dataset (or other dataset options)",
            option,
        )


def _flat_positions(array: np.ndarray, space: FactorSpace, where: str, option: str) -> np.ndarray:
    k = space.num_factors
    layouts = f"1-D flat grid positions (0..{space.total - 1}) or (N, {k}) factor indices"
    if array.dtype.kind not in "iu":
        raise SplitOptionError(
            f"{where}: dtype {array.dtype}; allowed: integer arrays ({layouts})", option
        )
    if array.size == 0:
        raise SplitOptionError(f"{where}: is empty; a split's set needs combinations", option)
    if array.ndim == 1:
        flat = array.astype(np.int64)
        bad = (flat < 0) | (flat >= space.total)
        if bad.any():
            raise SplitOptionError(
                f"{where}: grid position {int(flat[bad][0])} is out of range; allowed "
                f"0..{space.total - 1} (the grid {_grid(space)})",
                option,
            )
    elif array.ndim == 2 and array.shape[1] == k:
        rows = array.astype(np.int64)
        for col, (name, size) in enumerate(zip(space.names, space.sizes, strict=True)):
            bad = (rows[:, col] < 0) | (rows[:, col] >= size)
            if bad.any():
                raise SplitOptionError(
                    f"{where}: index {int(rows[bad, col][0])} of factor {name!r} (column {col}) "
                    f"is out of range; allowed 0..{size - 1}",
                    option,
                )
        flat = np.ravel_multi_index(tuple(rows.T), space.sizes).astype(np.int64)
    else:
        raise SplitOptionError(f"{where}: shape {array.shape}; allowed: {layouts}", option)
    unique, counts = np.unique(flat, return_counts=True)
    if unique.size != flat.size:
        twice = int(unique[counts > 1][0])
        raise SplitOptionError(
            f"{where}: {flat.size - unique.size} repeated combinations (e.g. "
            f"{_combination(twice, space)}); allowed: each combination once",
            option,
        )
    return unique


def _combination(position: int, space: FactorSpace) -> dict[str, int]:
    values = np.unravel_index(position, space.sizes)
    return {name: int(v) for name, v in zip(space.names, values, strict=True)}


def _grid(space: FactorSpace) -> dict[str, int]:
    return dict(zip(space.names, space.sizes, strict=True))


def _shown(value: Any) -> str:
    return str(Path(value).expanduser())
