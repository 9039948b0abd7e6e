"""The splits of Schott et al. (2022, "Visual Representation Learning Does Not Generalize
Strongly Within the Same Domain"): random, composition, interpolation, extrapolation.

Per dataset a drop ratio ``r`` (dSprites 0.2, 3dshapes 0.15, MPI3D 0.1) and factors kept whole
(dSprites ``shape``; 3dshapes ``shape``; MPI3D ``object_shape`` and ``object_size``); the
others are the ``m`` *split factors*. For a split factor of ``n`` values:

- extrapolation: hold out the top ``ceil(n r)`` indices; an image is test if ANY split factor
  is held out;
- interpolation: keep ``round(linspace(0, n - 1, n - ceil(n r)))`` (numpy's round half to
  even) and hold out the rest; same test rule;
- composition: with ``q = 1 - (1 - (1 - r)^m)^(1/m)``, mark the lowest ``floor(n q)``
  indices; an image is TRAIN if any split factor is marked, test otherwise;
- random: a seeded random set of the grid (exact count) with extrapolation's test fraction
  ``1 - prod (1 - ceil(n r) / n)``.

Test fractions (dSprites / 3dshapes / MPI3D): extrapolation and interpolation 0.6745 /
0.6928 / 0.7000, composition 0.7392 / 0.6804 / 0.7225. Each split's encoder set is its train
set, ``heldout`` its test set; the scenario ``test`` fits probes on train and scores them on
test with R^2 over the full grid's variance (``r2_variance="grid"``) and every factor scored
(``ood_factors=()``: Schott et al. score the extrapolated factors too). Extrapolation and
interpolation add one scenario ``single_<factor>`` per split factor: test images with exactly
that factor out of range (the paper's single-factor OOD analysis).

Every set is a selector, so the splits are data: :func:`schott_sets` returns them. Each split
also reads its train and test sets from index files the user supplies (the published ones,
or ones :func:`~raystudy.data.splits.index_files.write_split_indices` wrote), given as options:
``split: {name: schott_extrapolation, options: {index_file: /path/split.npz}}`` (or
``train_file`` and ``test_file``; formats in :mod:`raystudy.data.splits.index_files`). The split is
then the same but for its sets (:func:`file_sets`): the single-factor scenarios of
extrapolation and interpolation hold out, per factor, the values its train set never shows.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.factors import FactorSpace
from raystudy.data.core.families import family_of
from raystudy.data.splits.index_files import FILE_OPTIONS, read_split_indices
from raystudy.data.splits.registry import register_split
from raystudy.data.splits.selectors import Selector
from raystudy.data.splits.split import Scenario, Split

KINDS = ("random", "composition", "interpolation", "extrapolation")
DROP_RATIO = {"dsprites": 0.2, "shapes3d": 0.15, "mpi3d": 0.1}
KEPT_WHOLE = {
    "dsprites": ("shape",),
    "shapes3d": ("shape",),
    "mpi3d": ("object_shape", "object_size"),
}
RANDOM_SEED = 0


def _ceil(x: float) -> int:
    # n * r in floating point can land a hair above an integer (6 * 0.1); round first.
    return math.ceil(round(x, 9))


def held_out_top(n: int, r: float) -> list[int]:
    """Extrapolation: the top ``ceil(n r)`` indices of a factor of ``n`` values."""
    return list(range(n - _ceil(n * r), n))


def kept_spread(n: int, r: float) -> list[int]:
    """Interpolation: ``round(linspace(0, n - 1, n - ceil(n r)))``, the kept indices."""
    return sorted(set(np.round(np.linspace(0, n - 1, n - _ceil(n * r))).astype(int).tolist()))


def composition_quantile(r: float, m: int) -> float:
    """``q = 1 - (1 - (1 - r)^m)^(1/m)``: marking the lowest fraction ``q`` of each of ``m``
    factors leaves ``(1 - q)^m = 1 - (1 - r)^m`` of the grid unmarked (test)."""
    return 1.0 - (1.0 - (1.0 - r) ** m) ** (1.0 / m)


def marked_low(n: int, q: float) -> list[int]:
    """Composition: the lowest ``floor(n q)`` indices."""
    return list(range(math.floor(round(n * q, 9))))


@dataclass(frozen=True)
class SchottSets:
    """A Schott split as selectors: ``train`` (the encoder set), ``test`` and, for
    extrapolation and interpolation, the single-factor-OOD test subsets."""

    train: Selector
    test: Selector
    single: dict[str, Selector]


def schott_sets(space: FactorSpace, family: str, kind: str) -> SchottSets:
    """The selectors of split ``kind`` on a grid of ``family`` (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"unknown Schott split {kind!r}; allowed: {', '.join(KINDS)}")
    r = DROP_RATIO[family]
    # A factor with one value (a sub-grid file) has nothing to split: it is kept whole too.
    factors = [f for f in space.factors if f.name not in KEPT_WHOLE[family] and f.size > 1]
    if kind == "composition":
        q = composition_quantile(r, len(factors))
        marks = {f.name: marked_low(f.size, q) for f in factors}
        train: Selector = {"any": [{name: idx} for name, idx in marks.items() if idx]}
        return SchottSets(train, {"not": train}, {})
    if kind == "random":
        kept = math.prod(1.0 - len(held_out_top(f.size, r)) / f.size for f in factors)
        test: Selector = {"random": {"p": 1.0 - kept, "seed": RANDOM_SEED, "exact": True}}
        return SchottSets({"not": test}, test, {})
    if kind == "extrapolation":
        held = {f.name: held_out_top(f.size, r) for f in factors}
    else:
        held = {f.name: sorted(set(range(f.size)) - set(kept_spread(f.size, r))) for f in factors}
    held = {name: idx for name, idx in held.items() if idx}
    kept = {f.name: sorted(set(range(f.size)) - set(held.get(f.name, []))) for f in factors}
    train = {name: kept[name] for name in held}
    single: dict[str, Any] = {
        name: {name: idx, **{other: kept[other] for other in held if other != name}}
        for name, idx in held.items()
    }
    return SchottSets(train, {"not": train}, single)


def file_sets(space: FactorSpace, kind: str, train: np.ndarray, test: np.ndarray) -> SchottSets:
    """Split ``kind`` with the train and test sets given as flat grid positions (read from
    files). For extrapolation and interpolation, a factor's held-out values are those no
    train combination has, and ``single_<factor>`` is the test set with that factor held out
    and every other such factor at a value the train set has (as :func:`schott_sets`)."""
    train_set: Selector = {"grid_index": train}
    test_set: Selector = {"grid_index": test}
    if kind not in ("extrapolation", "interpolation"):
        return SchottSets(train_set, test_set, {})
    shown = np.unravel_index(train, space.sizes)
    kept = {f.name: np.unique(col).tolist() for f, col in zip(space.factors, shown, strict=True)}
    held = {
        f.name: sorted(set(range(f.size)) - set(kept[f.name]))
        for f in space.factors
        if len(kept[f.name]) < f.size
    }
    single: dict[str, Selector] = {
        name: {"all": [test_set, {name: idx, **{o: kept[o] for o in held if o != name}}]}
        for name, idx in held.items()
    }
    return SchottSets(train_set, test_set, single)


def schott_split(
    ds: GroundTruthDataset, kind: str, **files: str | os.PathLike[str] | None
) -> Split:
    """Split ``kind`` over ``ds``; with index files (``index_file``, or ``train_file`` and
    ``test_file``), its train and test sets read from them."""
    name = f"schott_{kind}"
    family = family_of(ds, name, tuple(DROP_RATIO))
    files_given = any(v is not None for v in files.values())
    if files_given:
        sets = file_sets(ds.factors, kind, *read_split_indices(ds.factors, files))
    else:
        sets = schott_sets(ds.factors, family, kind)
    scenarios = [Scenario("test", sets.train, sets.test, r2_variance="grid")]
    scenarios += [
        Scenario(f"single_{factor}", sets.train, subset, r2_variance="grid")
        for factor, subset in sets.single.items()
    ]
    split = Split(name, sets.train, scenarios, ds, where=f"splits.{name}", heldout=sets.test)
    if files_given:
        # A file's sets are the user's: a single-factor scenario may find nothing in them.
        split.check_nonempty()
    return split


def _register(kind: str, doc: str) -> Callable[..., Split]:
    def factory(ds: GroundTruthDataset, **files: str | os.PathLike[str] | None) -> Split:
        return schott_split(ds, kind, **files)

    factory.__name__ = f"schott_{kind}"
    factory.__doc__ = doc
    return register_split(f"schott_{kind}", options=FILE_OPTIONS)(factory)


schott_random = _register(
    "random", "Schott et al. 2022, random (iid) split: a seeded random test set of the grid."
)
schott_composition = _register(
    "composition",
    "Schott et al. 2022, composition: train on combinations with a low value somewhere.",
)
schott_interpolation = _register(
    "interpolation",
    "Schott et al. 2022, interpolation: values between the kept ones are held out.",
)
schott_extrapolation = _register(
    "extrapolation",
    "Schott et al. 2022, extrapolation: the top values of each split factor are held out.",
)
