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

Every set is a selector, so the splits are data: :func:`schott_sets` returns them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from raystudy.data.base import GroundTruthDataset
from raystudy.data.factors import FactorSpace
from raystudy.data.families import family_of
from raystudy.data.selectors import Selector
from raystudy.data.split_registry import register_split
from raystudy.data.splits import Scenario, Split

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


def schott_split(ds: GroundTruthDataset, kind: str) -> Split:
    name = f"schott_{kind}"
    family = family_of(ds, name, tuple(DROP_RATIO))
    sets = schott_sets(ds.factors, family, kind)
    scenarios = [Scenario("test", sets.train, sets.test, r2_variance="grid")]
    scenarios += [
        Scenario(f"single_{factor}", sets.train, subset, r2_variance="grid")
        for factor, subset in sets.single.items()
    ]
    return Split(name, sets.train, scenarios, ds, where=f"splits.{name}", heldout=sets.test)


@register_split("schott_random")
def schott_random(ds: GroundTruthDataset) -> Split:
    """Schott et al. 2022, random (iid) split: a seeded random test set of the grid."""
    return schott_split(ds, "random")


@register_split("schott_composition")
def schott_composition(ds: GroundTruthDataset) -> Split:
    """Schott et al. 2022, composition: train on combinations with a low value somewhere."""
    return schott_split(ds, "composition")


@register_split("schott_interpolation")
def schott_interpolation(ds: GroundTruthDataset) -> Split:
    """Schott et al. 2022, interpolation: values between the kept ones are held out."""
    return schott_split(ds, "interpolation")


@register_split("schott_extrapolation")
def schott_extrapolation(ds: GroundTruthDataset) -> Split:
    """Schott et al. 2022, extrapolation: the top values of each split factor are held out."""
    return schott_split(ds, "extrapolation")
