"""The conditions of Montero et al. (NeurIPS 2022, "Lost in Latent Space: Examining Failures of
Disentangled Models at Combinatorial Generalisation"), as named splits, with the modifiers
that thin the data set around them.

The sets are those of the paper's code (``mmrl/lost-in-latent-space``,
``scripts/configs/datasplits.py``; the condition names are those of its
``scripts/analysis/conditions.yaml`` and ``mmrl/disent-and-gen``), translated from factor
values to grid indices. The value thresholds fall between grid values, so each translation is
exact: dSprites positions are ``i / 31`` and scales ``0.5 + 0.1 i``; 3dshapes hues ``i / 10``,
scales ``linspace(0.75, 1.25, 8)`` and orientations ``linspace(-30, 30, 15)``; MPI3D's values
are the indices themselves; ``circles`` and ``simple``
(:mod:`raystudy.data.sources.procedural.circles`, whose grid is raystudy's choice) place the sprite
at ``0.1 + 0.8 i / 31``.

=======================  ==============================================================
split                    held-out set (indices; the paper's condition in brackets)
=======================  ==============================================================
montero2022_loo          [recomb2element/leave1out] dSprites: ellipse, scale 2..5
                         (> 0.6), orientation 14..25 (in (2pi/3, 4pi/3)), pos_x and
                         pos_y 21..31 (> 0.66); 3dshapes: floor, wall and object hue
                         8..9 (>= 0.8), scale 5..7 (>= 1.1), cylinder, orientation
                         12..14 (> 20 degrees); MPI3D: olive, cylinder, large, centre
                         camera, sea-green background, both axes 36..39 (> 35)
montero2022_shape2tx     [recomb2range/sqr2tx] dSprites: square & pos_x 16..31 (> 0.5)
montero2022_blank_side   [extrp/blank_side] dSprites: pos_x 16..31 (> 0.5)
montero2022_shape2ohue   [recomb2range/shape2ohue] 3dshapes: capsule & object hue 5..9
                         (>= 0.5)
montero2022_shape2ohueq  [recomb2range/shape2ohueq] 3dshapes: capsule & object hue 0..2
                         (<= 0.25); the paper runs it with ``half_ohues``
montero2022_fhue2whue    [recomb2range/fhue2whue] 3dshapes: floor hue 8..9 (>= 0.75) &
                         wall hue 0..5 (<= 0.5)
montero2022_ohue2whue    [recomb2range/ohue2whue] 3dshapes: object hue 8..9 & wall hue 0..5
montero2022_fhue_gt50    [extrp/fhue_gt50] 3dshapes: floor hue 5..9 (>= 0.5)
montero2022_cyl2horz     [recomb2range/cyl2horz] MPI3D: cylinder & horizontal_axis 0..19
montero2022_objc2horz    [recomb2range/objc2horz] MPI3D: red & horizontal_axis 0..19
montero2022_horz_gt20    [extrp/horz_gt20] MPI3D: horizontal_axis 21..39; trains on
                         0..19, so index 20 is in neither set, as in the paper's code
montero2022_objc_gt3     [extrp/objc_gt3] MPI3D: object_color 4..5 (brown, olive)
montero2022_midpos       [recomb2range/midpos] circles: pos_x and pos_y 10..21 (in
                         [0.35, 0.65]); simple: the square (shape 1) there
montero2022_shape2px     [recomb2range/shape2px] circles: pos_x and pos_y 16..31 (> 0.5);
                         simple: the square there
=======================  ==============================================================

The code's further variants (its interpolation conditions, 3dshapes' element variant
``shape2ohue``, the range variants of dSprites, 3dshapes and MPI3D) are splits too, from
:mod:`raystudy.data.splits.papers.montero2022_variants` (:data:`ALL_CONDITIONS`), built the
same way.

``montero2022_loo``'s sets equal Montero et al. 2021's recombination-to-element
(:mod:`raystudy.data.splits.papers.montero2021`), and dSprites' ``shape2tx`` and ``blank_side`` its
recombination-to-range and extrapolation: the 2022 paper reuses them.

``montero2022_r2e``, ``montero2022_r2r`` and ``montero2022_extrp`` name the paper's three
kinds of condition and pick the variant its figures show on each dataset (:data:`KINDS`), so
one grid can cross datasets with conditions.

The encoder trains on the complement (``horz_gt20``: on indices 0..19). Each split has one
probe scenario, ``test``: probes fit on the encoder's set and are scored on the held-out one,
with the R^2 denominator the variance over the whole grid (``r2_variance: grid``), since a
held-out set often fixes a factor (one shape); in the extrapolation conditions the shifted
factor's held-out values are never seen and it is left out of the mean score.

Modifiers (option ``modifiers``, a list): the paper's code intersects both the training and
the held-out set with each one (``compose`` in ``datasplits.py``), so the models see less of
the grid, e.g. only every other object hue:

=========  ================  ============================================================
dataset    modifier          keeps
=========  ================  ============================================================
dSprites   sparse_posX       pos_x in 0, 7, 15, 23, 31
dSprites   sparse_posY       pos_y in 0, 7, 15, 23, 31 (defined in the code, left out of its
                             table of modifiers; see montero2022_variants)
3dshapes   even_ohues        object hue 0, 2, 4, 6, 8
3dshapes   half_ohues        object hue 0..4
3dshapes   even_wnf_hues     floor and wall hue 0, 2, 4, 6, 8
MPI3D      four_shapes       object_shape 1, 2, 4, 5 (no cone, no hexagonal prism)
MPI3D      fix_hx            horizontal_axis 0
MPI3D      lhalf_hx          horizontal_axis 0..19
MPI3D      even_vx           vertical_axis 1, 3, ..., 39 (the code's ``vx % 2 == 1``: the
                             even positions counted from 1)
=========  ================  ============================================================

On procedural dSprites use ``orientation_grid: closed`` (the official files' angles), as for
Montero 2021's element split: on the default grid each held-out ellipse of ``loo`` turned by
180 degrees is a training image.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.families import family_of, require_sizes
from raystudy.data.splits.papers.montero2021 import EXCLUDED as MONTERO_2021
from raystudy.data.splits.papers.montero2021 import GRID_SIZES as OFFICIAL_GRID_SIZES
from raystudy.data.splits.papers.montero2022_variants import (
    SPARSE_POS,
    VARIANT_DOCS,
    VARIANTS,
    Condition,
)
from raystudy.data.splits.registry import SplitOptionError, register_split
from raystudy.data.splits.selectors import Selector, SelectorError
from raystudy.data.splits.split import Scenario, Split

GRID_SIZES = {**OFFICIAL_GRID_SIZES, "circles": (32, 32), "simple": (32, 32, 2)}
_HUE_LOW = {"le": 5}  # hues <= 0.5
# circles and simple: positions 0.1 + 0.8 i / 31 (raystudy.data.sources.procedural.circles);
# [0.35, 0.65] is 10..21 and > 0.5 is 16..31.
_MIDDLE = {"ge": 10, "le": 21}
_EVEN_10 = [0, 2, 4, 6, 8]


def _from_2021(kind: str, family: str) -> Condition:
    excluded, ood = MONTERO_2021[kind][family]
    return Condition(excluded, ood_factors=ood)


# split name (without the prefix) -> family -> condition
CONDITIONS: dict[str, dict[str, Condition]] = {
    "loo": {f: _from_2021("element", f) for f in ("dsprites", "shapes3d", "mpi3d")},
    "shape2tx": {"dsprites": _from_2021("range", "dsprites")},
    "blank_side": {"dsprites": _from_2021("extrapolation", "dsprites")},
    "shape2ohue": {"shapes3d": Condition({"shape": [3], "object_hue": {"ge": 5}})},
    "shape2ohueq": {"shapes3d": Condition({"shape": [3], "object_hue": {"le": 2}})},
    "fhue2whue": {"shapes3d": Condition({"floor_hue": {"ge": 8}, "wall_hue": _HUE_LOW})},
    "ohue2whue": {"shapes3d": Condition({"object_hue": {"ge": 8}, "wall_hue": _HUE_LOW})},
    "fhue_gt50": {
        "shapes3d": Condition({"floor_hue": {"ge": 5}}, ood_factors=("floor_hue",)),
    },
    "cyl2horz": {"mpi3d": Condition({"object_shape": [2], "horizontal_axis": {"le": 19}})},
    "objc2horz": {"mpi3d": Condition({"object_color": [2], "horizontal_axis": {"le": 19}})},
    "horz_gt20": {
        "mpi3d": Condition(
            {"horizontal_axis": {"ge": 21}},
            encoder={"horizontal_axis": {"le": 19}},
            ood_factors=("horizontal_axis",),
        ),
    },
    "objc_gt3": {
        "mpi3d": Condition({"object_color": {"ge": 4}}, ood_factors=("object_color",)),
    },
    "midpos": {
        "circles": Condition({"pos_x": _MIDDLE, "pos_y": _MIDDLE}),
        "simple": Condition({"pos_x": _MIDDLE, "pos_y": _MIDDLE, "shape": [1]}),
    },
    "shape2px": {
        "circles": Condition({"pos_x": {"ge": 16}, "pos_y": {"ge": 16}}),
        "simple": Condition({"pos_x": {"ge": 16}, "pos_y": {"ge": 16}, "shape": [1]}),
    },
}

_SOURCE = "(Montero et al. 2022; lost-in-latent-space, scripts/configs/datasplits.py)"
DOCS = {
    "loo": "Leave-one-out [recomb2element/leave1out]: held out, dSprites: ellipse & scale "
    "> 0.6 & orientation in (2pi/3, 4pi/3) & pos_x, pos_y > 0.66; 3dshapes: floor, wall and "
    "object hue >= 0.8 & scale >= 1.1 & cylinder & orientation > 20 degrees; MPI3D: olive & "
    "cylinder & large & centre camera & sea-green background & both axes > 35. " + _SOURCE,
    "shape2tx": "Shape x pos_x [recomb2range/sqr2tx]: held out, dSprites squares at pos_x "
    "> 0.5. " + _SOURCE,
    "blank_side": "Blank side [extrp/blank_side]: held out, dSprites pos_x > 0.5. " + _SOURCE,
    "shape2ohue": "Shape x object hue [recomb2range/shape2ohue]: held out, 3dshapes capsules "
    "(pill) with object hue >= 0.5. " + _SOURCE,
    "shape2ohueq": "Shape x low object hue [recomb2range/shape2ohueq]: held out, 3dshapes "
    "capsules with object hue <= 0.25 (the paper pairs it with modifier half_ohues). " + _SOURCE,
    "fhue2whue": "Floor x wall hue [recomb2range/fhue2whue]: held out, 3dshapes floor hue "
    ">= 0.75 & wall hue <= 0.5. " + _SOURCE,
    "ohue2whue": "Object x wall hue [recomb2range/ohue2whue]: held out, 3dshapes object hue "
    ">= 0.75 & wall hue <= 0.5. " + _SOURCE,
    "fhue_gt50": "Floor hue > 0.5 [extrp/fhue_gt50]: held out, 3dshapes floor hue >= 0.5 "
    "(train < 0.5). " + _SOURCE,
    "cyl2horz": "Cylinder x horizontal [recomb2range/cyl2horz]: held out, MPI3D cylinders at "
    "horizontal_axis < 20. " + _SOURCE,
    "objc2horz": "Colour x horizontal [recomb2range/objc2horz]: held out, MPI3D red objects "
    "at horizontal_axis < 20. " + _SOURCE,
    "horz_gt20": "Horizontal > 20 [extrp/horz_gt20]: held out, MPI3D horizontal_axis > 20; "
    "trains on < 20 (20 is in neither set). " + _SOURCE,
    "objc_gt3": "Colour > 3 [extrp/objc_gt3]: held out, MPI3D object_color > 3 (brown, "
    "olive). " + _SOURCE,
    "midpos": "Middle positions [recomb2range/midpos]: held out, circles with both "
    "positions in [0.35, 0.65]; simple: squares there. " + _SOURCE,
    "shape2px": "Corner [recomb2range/shape2px]: held out, circles with both positions > 0.5; "
    "simple: squares there. " + _SOURCE,
}

# family -> modifier -> the set it keeps
MODIFIERS: dict[str, dict[str, dict[str, Any]]] = {
    "dsprites": {"sparse_posX": {"pos_x": SPARSE_POS}, "sparse_posY": {"pos_y": SPARSE_POS}},
    "shapes3d": {
        "even_ohues": {"object_hue": _EVEN_10},
        "half_ohues": {"object_hue": {"le": 4}},
        "even_wnf_hues": {"floor_hue": _EVEN_10, "wall_hue": _EVEN_10},
    },
    "mpi3d": {
        "four_shapes": {"object_shape": [1, 2, 4, 5]},
        "fix_hx": {"horizontal_axis": [0]},
        "lhalf_hx": {"horizontal_axis": {"le": 19}},
        "even_vx": {"vertical_axis": list(range(1, 40, 2))},
    },
}


def montero2022_split(
    ds: GroundTruthDataset, condition: str, modifiers: Sequence[str] | None = None
) -> Split:
    """The split ``montero2022_<condition>`` over ``ds``, its sets thinned by ``modifiers``."""
    name = f"montero2022_{condition}"
    grids = ALL_CONDITIONS[condition]
    family = family_of(ds, name, tuple(grids))
    require_sizes(ds, name, family, GRID_SIZES[family])
    cond = grids[family]
    kept = _modifier_sets(name, family, modifiers)
    heldout = _thin(cond.heldout, kept)
    encoder = _thin(cond.encoder if cond.encoder is not None else {"not": cond.heldout}, kept)
    split = Split(
        name,
        encoder,
        [Scenario("test", encoder, heldout, ood_factors=cond.ood_factors, r2_variance="grid")],
        ds,
        where=f"splits.{name}",
        heldout=heldout,
    )
    if kept:
        try:
            split.check_nonempty()
        except SelectorError as err:
            raise SplitOptionError(
                f"split {name!r}: modifiers {list(modifiers or ())} leave a set empty: {err}",
                option="modifiers",
            ) from None
    return split


def _modifier_sets(
    split: str, family: str, modifiers: Sequence[str] | None
) -> list[dict[str, Any]]:
    if modifiers is None:
        return []
    if isinstance(modifiers, str) or not isinstance(modifiers, Sequence):
        raise SplitOptionError(
            f"split {split!r}: option 'modifiers' must be a list of names, got {modifiers!r}",
            option="modifiers",
        )
    allowed = MODIFIERS.get(family, {})
    for mod in modifiers:
        if mod not in allowed:
            raise SplitOptionError(
                f"split {split!r}: unknown modifier {mod!r} for the {family} grid; "
                f"allowed: {', '.join(allowed) or 'none'}",
                option="modifiers",
            )
    return [allowed[m] for m in modifiers]


def _thin(selector: Mapping[str, Any], kept: list[dict[str, Any]]) -> Selector:
    return {"all": [dict(selector), *kept]} if kept else dict(selector)


def _register(condition: str) -> Callable[..., Split]:
    def factory(ds: GroundTruthDataset, modifiers: Sequence[str] | None = None) -> Split:
        return montero2022_split(ds, condition, modifiers)

    factory.__name__ = f"montero2022_{condition}"
    factory.__doc__ = ALL_DOCS[condition]
    return register_split(f"montero2022_{condition}", options=("modifiers",))(factory)


#: The figures' conditions and the code's further variants (`montero2022_variants`).
ALL_CONDITIONS = {**CONDITIONS, **VARIANTS}
ALL_DOCS = {**DOCS, **VARIANT_DOCS}
SPLIT_FACTORIES = {condition: _register(condition) for condition in ALL_CONDITIONS}

# The paper's three kinds of condition, and the variant its figures use on each dataset
# (lost-in-latent-space, scripts/analysis/conditions.yaml: r2e, r2r, extrp per dataset; on
# MPI3D the first of its two variants, on circles and simple the main text's midpos). A study
# crosses datasets with these, since a grid cannot pair a dataset with its own split names.
KINDS: dict[str, dict[str, str]] = {
    "r2e": {"dsprites": "loo", "shapes3d": "loo", "mpi3d": "loo"},
    "r2r": {
        "dsprites": "shape2tx",
        "shapes3d": "shape2ohue",
        "mpi3d": "cyl2horz",
        "circles": "midpos",
        "simple": "midpos",
    },
    "extrp": {"dsprites": "blank_side", "shapes3d": "fhue_gt50", "mpi3d": "horz_gt20"},
}
KIND_NAMES = {"r2e": "recombination-to-element", "r2r": "recombination-to-range"}
KIND_NAMES["extrp"] = "extrapolation"


def _register_kind(kind: str) -> Callable[..., Split]:
    name = f"montero2022_{kind}"

    def factory(ds: GroundTruthDataset, modifiers: Sequence[str] | None = None) -> Split:
        family = family_of(ds, name, tuple(KINDS[kind]))
        return montero2022_split(ds, KINDS[kind][family], modifiers)

    variants = "; ".join(f"{family}: montero2022_{c}" for family, c in KINDS[kind].items())
    factory.__name__ = name
    factory.__doc__ = f"Montero et al. 2022's {KIND_NAMES[kind]} on each dataset: {variants}."
    return register_split(name, options=("modifiers",))(factory)


KIND_FACTORIES = {kind: _register_kind(kind) for kind in KINDS}
