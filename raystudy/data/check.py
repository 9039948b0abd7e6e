"""Build a study's datasets and splits once, before it starts, and say what is wrong.

A dataset file that is missing or malformed, an option of the wrong type, a built-in split
the dataset lacks the factors for, or a split written in the YAML whose selectors are
malformed, select nothing or overlap where they must not: each would otherwise fail in every
trial, after Ray has started. :class:`DataChecker` turns each into a :class:`DataProblem`
naming the spec field (``dataset.options.path``, ``split.scenarios.ood.test``), for
:mod:`raystudy.spec` to report with the file's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.registry import DatasetOptionError, get_dataset, path_options
from raystudy.data.sources.files.dataset import FileDataset
from raystudy.data.splits.registry import SplitOptionError, split_from_config
from raystudy.data.splits.selectors import SelectorError
from raystudy.data.splits.split import Split


@dataclass(frozen=True)
class DataProblem:
    field: str  # a dotted spec path, e.g. "dataset.options.path"
    message: str


class DataChecker:
    """Checks (dataset, split) pairs, building each distinct dataset once."""

    def __init__(self) -> None:
        self._datasets: dict[str, GroundTruthDataset | DataProblem] = {}
        self._checked: dict[str, Split | DataProblem] = {}

    def check(self, name: str, options: Mapping[str, Any], split: Any) -> DataProblem | None:
        """The first problem of a trial's dataset and split, or None."""
        built = self.split(name, options, split)
        return built if isinstance(built, DataProblem) else None

    def split(self, name: str, options: Mapping[str, Any], split: Any) -> Split | DataProblem:
        """A trial's split built on its dataset, or the first problem of either."""
        ds = self.dataset(name, options)
        if isinstance(ds, DataProblem):
            return ds
        key = _key(name, options, split)
        if key not in self._checked:
            self._checked[key] = _build_split(split, ds)
        return self._checked[key]

    def dataset(self, name: str, options: Mapping[str, Any]) -> GroundTruthDataset | DataProblem:
        key = _key(name, options)
        if key not in self._datasets:
            self._datasets[key] = _build_dataset(name, options)
        return self._datasets[key]


def _key(*parts: Any) -> str:
    # repr, not sorted JSON: YAML keys may mix types ({0: .., all: ..}), which cannot be sorted.
    return repr(parts)


def _build_dataset(name: str, options: Mapping[str, Any]) -> GroundTruthDataset | DataProblem:
    try:
        relative = _relative_path_problem(name, options)
        if relative is not None:
            return relative
        return get_dataset(name, **options)
    except DatasetOptionError as exc:
        return DataProblem(_option_field(exc.option), str(exc))
    except Exception as exc:
        # A constructor judges its own options (files included): whatever it raises is a
        # problem of those options. File errors name the file, not the option: find the
        # option that holds its path.
        text = str(exc)
        paths = [k for k, v in options.items() if _is_path(v) and _shown(v) in text]
        field = _option_field(paths[0] if len(paths) == 1 else None)
        detail = text if isinstance(exc, ValueError | OSError) else f"{type(exc).__name__}: {text}"
        return DataProblem(field, detail)


def _relative_path_problem(name: str, options: Mapping[str, Any]) -> DataProblem | None:
    """A relative path among the dataset's path options: it would be found here, from the
    folder the study is started in, and then not in any trial, which runs in a working folder
    of its own (the same rule as a split's index files)."""
    for key in path_options(name):
        value = options.get(key)
        if _is_path(value) and not Path(value).expanduser().is_absolute():
            return DataProblem(
                _option_field(key),
                f"{str(value)!r} is a relative path; each trial runs in a working folder of its "
                f"own, so give an absolute path (or one starting with ~), e.g. "
                f"{str(Path(value).resolve())!r}",
            )
    return None


def _build_split(split: Any, ds: GroundTruthDataset) -> Split | DataProblem:
    try:
        # Seed 0 stands for every trial's: a split that draws its sets from the seed draws
        # sets of one shape for any seed, and that shape is what is checked here.
        built = split_from_config(split, ds, where="split", seed=0)
        # A file may hold only part of the grid, so a built-in set can be empty there;
        # procedural datasets hold the whole grid, which the built-in splits are tested on.
        # (A split written in the spec was checked as it was built.)
        if isinstance(ds, FileDataset):
            built.check_nonempty()
        return built
    except SplitOptionError as exc:
        return DataProblem(_split_option_field(exc.option), str(exc))
    except SelectorError as exc:
        # The message starts with the field path it is about: "split.encoder.hue: ...".
        field, _, message = str(exc).partition(": ")
        return DataProblem(field, message) if field.startswith("split") else _plain(exc)
    except Exception as exc:
        return _plain(exc)


def _plain(exc: Exception) -> DataProblem:
    text = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
    return DataProblem("split", text)


def _split_option_field(option: str | None) -> str:
    return f"split.options.{option}" if option else "split.options"


def _option_field(option: str | None) -> str:
    return f"dataset.options.{option}" if option else "dataset.options"


def _is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike) and bool(str(value))


def _shown(value: Any) -> str:
    # File errors print the path after expanduser (see core.files.require_file).
    return str(Path(value).expanduser())
