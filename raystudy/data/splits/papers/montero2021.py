"""The splits of Montero et al. (ICLR 2021, "The Role of Disentanglement in Generalisation"):
recombination-to-element, recombination-to-range, extrapolation, and every variant of them
that the paper's code defines (``mmrl/disent-and-gen``, ``scripts/configs/datasplits.py``).

Two families of names:

- ``montero_element``, ``montero_range``, ``montero_extrapolation``: on each grid, the
  variant the paper's figures show (its ``scripts/analysis/conditions.yaml``), so that one
  study can cross datasets with conditions;
- ``montero2021_<variant>``: each condition of ``datasplits.py`` on dSprites and 3dshapes by
  its name there, and the dSprites variants the paper's text adds (Sec. 2.1).

Each excludes one set of combinations from training (index masks on the official grids):

==============  ======================================================================
dSprites        element: ellipse (shape 1) & scale 2..5 & orientation 14..25 &
                pos_x 21..31 & pos_y 21..31; range: square (shape 0) & pos_x 16..31;
                extrapolation: pos_x 16..31
3dshapes        element: floor, wall and object hue 8..9 & scale 5..7 & cylinder (shape 1)
                & orientation 12..14; range: capsule (shape 3) & object hue 5..9;
                extrapolation: floor hue 5..9
MPI3D           element: olive (object_color 5) & cylinder (object_shape 2) & large
                (object_size 1) & center camera (camera_height 1) & sea green
                (background_color 1) & horizontal_axis 36..39 & vertical_axis 36..39;
                range: cylinder & horizontal_axis 0..19; extrapolation: horizontal_axis
                20..39
==============  ======================================================================

The MPI3D sets are the paper's on MPI3D-real, as its code writes them
(``leave1out``, ``cyl2horz``, ``horz_gt20``). One difference: that code trains extrapolation
on horizontal_axis < 20 and tests on > 20, so index 20 is in neither set; here the held-out
set is the whole upper half, 20..39 (as dSprites' pos_x 16..31 of 32), so every combination is
in one set or the other (``montero2022_horz_gt20`` keeps the code's gap).

The variants (:data:`VARIANTS`; the code's ``condition/variant`` in brackets). The code's
filters compare the files' factor values (``latents_values``; the dSprites shape by its class
in ``leave1out``); the thresholds fall between grid values, so each translation to indices is
exact, with dSprites positions ``i / 31``, scales ``0.5 + 0.1 i``, orientations
``2 pi i / 39``, and 3dshapes hues ``i / 10``, scales ``linspace(0.75, 1.25, 8)``,
orientations ``linspace(-30, 30, 15)``:

==============================  ==============================================================
split                           held out (indices; the code's rule in values)
==============================  ==============================================================
montero2021_leave1out           [recomb2element/leave1out] dSprites: ellipse & scale 2..5
                                (> 0.6) & orientation 14..25 (in (2pi/3, 4pi/3): 13 and 26
                                lie on the bounds, which are strict) & pos_x, pos_y 21..31
                                (> 0.66); 3dshapes: floor, wall and object hue 8..9 (>= 0.8)
                                & scale 5..7 (>= 1.1) & cylinder & orientation 12..14 (> 20)
montero2021_shape2tx            [recomb2range/shape2tx] dSprites: square (value 1) & pos_x
                                16..31 (> 0.5)
montero2021_shape2scale         [paper Sec. 2.1, 2nd variant] dSprites: square & scale 1..5
                                (> 0.5)
montero2021_shape2rot           [paper Sec. 2.1, 3rd variant] dSprites: square & orientation
                                10..39 (> 90 degrees)
montero2021_blank_side          [extrp/blank_side, ratio 0.5] dSprites: pos_x 16..31 (> 0.5);
                                trains on pos_x < 0.5
montero2021_blank_side_16       the same with ratio 0.16: pos_x 5..31
montero2021_blank_side_25       ratio 0.25: pos_x 8..31
montero2021_blank_side_75       ratio 0.75: pos_x 24..31
montero2021_shape2ohue          [recomb2range/shape2ohue] 3dshapes: capsule (3) & object hue
                                5..9 (>= 0.5)
montero2021_shape2fhue          [recomb2range/shape2fhue] 3dshapes: capsule & floor hue 5..9
                                (>= 0.5)
montero2021_ohue_whue2fhue      [recomb2range/ohue+whue2fhue] 3dshapes: object hue 8..9
                                (>= 0.8) & wall hue 0..2 (<= 0.2)
montero2021_fhue_gt50           [extrp/fhue_gt50] 3dshapes: floor hue 5..9 (>= 0.5)
==============================  ==============================================================

``blank_side`` takes its cut-off as an argument (``ratio``, default 0.5); the paper tries
0.16, 0.25, 0.50 and 0.75 (Sec. 2.1), hence the four splits; the run scripts call the 0.5 one
``blank_side_50``. No grid position equals a cut-off, so the training set (pos_x < ratio) is
the complement of the held-out one (pos_x > ratio). ``shape2scale`` and ``shape2rot`` are the
other two recombination-to-range variants of the paper's Sec. 2.1 ("[shape=square,
scale>0.5]", "[shape=square, rotation>90°]"); its run scripts name them
``dataset.leave1out_scale`` and ``dataset.rotation_extrp``, configs that are not in the
released ``datasplits.py``, so their sets follow the text. A square turned by a quarter turn
looks the same, so every square ``shape2rot`` holds out is within half a grid step (4.6
degrees) of a training square's image, and the one at 2 pi (index 39) is one. The paper's
text gives other thresholds than the code for recombination-to-element (scale < 0.6,
positions >= 0.6); the code's are used, as they are what the paper ran.

On procedural dSprites use ``orientation_grid: closed`` (the official files' angles): on the
default grid each held-out ellipse of ``element`` turned by 180 degrees is a training image,
pixel for pixel (see :mod:`raystudy.data.sources.procedural.dsprites`).

The encoder trains on the rest; the excluded set is the role ``heldout``. The paper's score is
the reconstruction NLL (Bernoulli cross-entropy summed over pixels, mean over images) on
training versus held-out images; besides it, the scenario ``test`` fits probes on the training
set and scores them on the held-out one. In extrapolation the held-out values of the shifted
factor are never seen, so that factor is left out of the mean score (``ood_factors``), as in
Dittadi et al. (2021); in the recombination splits every value is seen and all are scored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.families import family_of, require_sizes
from raystudy.data.splits.registry import register_split
from raystudy.data.splits.split import Scenario, Split

# The official grid sizes the masks are written for (a dSprites with orientation_bins is not).
GRID_SIZES = {
    "dsprites": (3, 6, 40, 32, 32),
    "shapes3d": (10, 10, 10, 8, 4, 15),
    "mpi3d": (6, 6, 2, 3, 3, 40, 40),
}


def _from(i: int) -> dict[str, int]:
    return {"ge": i}


# kind -> family -> (excluded set, factors left out of the mean transfer score)
EXCLUDED: dict[str, dict[str, tuple[dict[str, Any], tuple[str, ...]]]] = {
    "element": {
        "dsprites": (
            {
                "shape": [1],
                "scale": {"ge": 2, "le": 5},
                "orientation": {"ge": 14, "le": 25},
                "pos_x": _from(21),
                "pos_y": _from(21),
            },
            (),
        ),
        "shapes3d": (
            {
                "floor_hue": _from(8),
                "wall_hue": _from(8),
                "object_hue": _from(8),
                "scale": _from(5),
                "shape": [1],
                "orientation": _from(12),
            },
            (),
        ),
        "mpi3d": (
            {
                "object_color": [5],
                "object_shape": [2],
                "object_size": [1],
                "camera_height": [1],
                "background_color": [1],
                "horizontal_axis": _from(36),
                "vertical_axis": _from(36),
            },
            (),
        ),
    },
    "range": {
        "dsprites": ({"shape": [0], "pos_x": _from(16)}, ()),
        "shapes3d": ({"shape": [3], "object_hue": _from(5)}, ()),
        "mpi3d": ({"object_shape": [2], "horizontal_axis": {"le": 19}}, ()),
    },
    "extrapolation": {
        "dsprites": ({"pos_x": _from(16)}, ("pos_x",)),
        "shapes3d": ({"floor_hue": _from(5)}, ("floor_hue",)),
        "mpi3d": ({"horizontal_axis": _from(20)}, ("horizontal_axis",)),
    },
}


def _square(**factors: Any) -> dict[str, Any]:
    # dSprites' square: class 0, the value 1 that shape2tx compares latents_values with.
    return {"shape": [0], **factors}


def _capsule(**factors: Any) -> dict[str, Any]:
    # 3dshapes' pill / capsule: shape 3, the code's ``shp == 3.0``.
    return {"shape": [3], **factors}


def _blank_side(first_held_out: int) -> tuple[dict[str, Any], tuple[str, ...]]:
    return {"pos_x": _from(first_held_out)}, ("pos_x",)


# variant -> family -> (held-out set, factors left out of the mean transfer score); the
# variants of datasplits.py (and the paper's Sec. 2.1 for shape2scale, shape2rot and the
# blank_side cut-offs), translated from values to indices in the module docstring's table.
VARIANTS: dict[str, dict[str, tuple[dict[str, Any], tuple[str, ...]]]] = {
    "leave1out": {f: EXCLUDED["element"][f] for f in ("dsprites", "shapes3d")},
    "shape2tx": {"dsprites": (_square(pos_x=_from(16)), ())},
    "shape2scale": {"dsprites": (_square(scale=_from(1)), ())},
    "shape2rot": {"dsprites": (_square(orientation=_from(10)), ())},
    "blank_side": {"dsprites": _blank_side(16)},
    "blank_side_16": {"dsprites": _blank_side(5)},
    "blank_side_25": {"dsprites": _blank_side(8)},
    "blank_side_75": {"dsprites": _blank_side(24)},
    "shape2ohue": {"shapes3d": (_capsule(object_hue=_from(5)), ())},
    "shape2fhue": {"shapes3d": (_capsule(floor_hue=_from(5)), ())},
    "ohue_whue2fhue": {"shapes3d": ({"object_hue": _from(8), "wall_hue": {"le": 2}}, ())},
    "fhue_gt50": {"shapes3d": ({"floor_hue": _from(5)}, ("floor_hue",))},
}

#: The kind of condition each variant is (Montero et al. 2021, Sec. 2).
VARIANT_KINDS: dict[str, str] = {
    "leave1out": "element",
    **dict.fromkeys(
        ("shape2tx", "shape2scale", "shape2rot", "shape2ohue", "shape2fhue", "ohue_whue2fhue"),
        "range",
    ),
    **dict.fromkeys(
        ("blank_side", "blank_side_16", "blank_side_25", "blank_side_75", "fhue_gt50"),
        "extrapolation",
    ),
}

_SOURCE = "(Montero et al. 2021; disent-and-gen, scripts/configs/datasplits.py)"
_TEXT = "(Montero et al. 2021, Sec. 2.1; not in the released datasplits.py)"
VARIANT_DOCS: dict[str, str] = {
    "leave1out": "Recombination-to-element [recomb2element/leave1out]: held out, dSprites "
    "ellipses with scale > 0.6, orientation in (2pi/3, 4pi/3), pos_x and pos_y > 0.66; "
    "3dshapes cylinders with floor, wall and object hue >= 0.8, scale >= 1.1, orientation "
    "> 20 degrees. " + _SOURCE,
    "shape2tx": "Recombination-to-range [recomb2range/shape2tx]: held out, dSprites squares "
    "at pos_x > 0.5. " + _SOURCE,
    "shape2scale": "Recombination-to-range, the paper's second variant: held out, dSprites "
    "squares with scale > 0.5 (all but the smallest). " + _TEXT,
    "shape2rot": "Recombination-to-range, the paper's third variant: held out, dSprites "
    "squares turned by more than 90 degrees. " + _TEXT,
    "blank_side": "Extrapolation [extrp/blank_side, ratio 0.5]: held out, dSprites pos_x "
    "> 0.5. " + _SOURCE,
    "blank_side_16": "Extrapolation [extrp/blank_side, ratio 0.16]: held out, dSprites pos_x "
    "> 0.16 (the paper's cut-offs, Sec. 2.1). " + _SOURCE,
    "blank_side_25": "Extrapolation [extrp/blank_side, ratio 0.25]: held out, dSprites pos_x "
    "> 0.25 (the paper's cut-offs, Sec. 2.1). " + _SOURCE,
    "blank_side_75": "Extrapolation [extrp/blank_side, ratio 0.75]: held out, dSprites pos_x "
    "> 0.75 (the paper's cut-offs, Sec. 2.1). " + _SOURCE,
    "shape2ohue": "Recombination-to-range [recomb2range/shape2ohue]: held out, 3dshapes "
    "capsules with object hue >= 0.5. " + _SOURCE,
    "shape2fhue": "Recombination-to-range [recomb2range/shape2fhue]: held out, 3dshapes "
    "capsules on a floor hue >= 0.5. " + _SOURCE,
    "ohue_whue2fhue": "Recombination-to-range [recomb2range/ohue+whue2fhue]: held out, "
    "3dshapes scenes with object hue >= 0.8 and wall hue <= 0.2. " + _SOURCE,
    "fhue_gt50": "Extrapolation [extrp/fhue_gt50]: held out, 3dshapes floor hue >= 0.5 "
    "(trains on < 0.5). " + _SOURCE,
}


def _split(
    ds: GroundTruthDataset, name: str, table: dict[str, tuple[dict[str, Any], tuple[str, ...]]]
) -> Split:
    family = family_of(ds, name, tuple(table))
    require_sizes(ds, name, family, GRID_SIZES[family])
    excluded, ood = table[family]
    train = {"not": excluded}
    return Split(
        name,
        train,
        [Scenario("test", train, excluded, ood_factors=ood)],
        ds,
        where=f"splits.{name}",
        heldout=excluded,
    )


def montero_split(ds: GroundTruthDataset, kind: str) -> Split:
    """``montero_<kind>`` over ``ds``: the variant of the paper's figures on its grid."""
    return _split(ds, f"montero_{kind}", EXCLUDED[kind])


def montero2021_split(ds: GroundTruthDataset, variant: str) -> Split:
    """``montero2021_<variant>`` over ``ds`` (a dSprites or 3dshapes grid)."""
    return _split(ds, f"montero2021_{variant}", VARIANTS[variant])


def _register(kind: str, doc: str) -> Callable[[GroundTruthDataset], Split]:
    def factory(ds: GroundTruthDataset) -> Split:
        return montero_split(ds, kind)

    factory.__name__ = f"montero_{kind}"
    factory.__doc__ = doc
    return register_split(f"montero_{kind}")(factory)


montero_element = _register("element", "Montero et al. 2021, recombination-to-element.")
montero_range = _register("range", "Montero et al. 2021, recombination-to-range.")
montero_extrapolation = _register("extrapolation", "Montero et al. 2021, extrapolation.")


def _register_variant(variant: str) -> Callable[[GroundTruthDataset], Split]:
    def factory(ds: GroundTruthDataset) -> Split:
        return montero2021_split(ds, variant)

    factory.__name__ = f"montero2021_{variant}"
    factory.__doc__ = VARIANT_DOCS[variant]
    return register_split(f"montero2021_{variant}")(factory)


VARIANT_FACTORIES = {variant: _register_variant(variant) for variant in VARIANTS}
