"""The further conditions of Montero et al. (NeurIPS 2022, "Lost in Latent Space") that its code
defines beside the ones its figures use (:mod:`raystudy.data.splits.papers.montero2022`), and the
:class:`Condition` record every ``montero2022_*`` split is built from. Data only: the splits
are built and registered by :mod:`raystudy.data.splits.papers.montero2022`.

Each set is the one of the paper's code (``mmrl/lost-in-latent-space``,
``scripts/configs/datasplits.py``: the ``interp``, ``recomb2element``, ``recomb2range`` and
``extrp`` tables of ``DSprites``, ``Shapes3D`` and ``MPI3D``), translated from its rule on
factor values (``factor_values``; ``factor_classes`` where the code compares classes) to grid
indices, each exactly: dSprites shape values 1, 2, 3 are square, ellipse, heart (indices 0, 1,
2), positions ``i / 31``, scales ``0.5 + 0.1 i``, and no dSprites threshold is a grid value;
3dshapes hues are ``i / 10``, shape 3 the capsule, orientations ``linspace(-30, 30, 15)``,
and where a threshold is a grid value (hue 0.5, index 5; orientation 0, index 7) the code's
``>=`` includes it, as here; MPI3D's values are the indices.

========================  ===================================================================
split                     held out (indices; the code's ``condition/variant`` and rule)
========================  ===================================================================
montero2022_ell2tx        [recomb2range/ell2tx] dSprites: ellipse & pos_x 16..31 (shape == 2 &
                          tx > 0.5)
montero2022_sqr2scl       [recomb2range/sqr2scl] dSprites: square & scale 3..5 (shape == 1 &
                          scale > 0.75)
montero2022_sqr2tx_cent   [recomb2range/sqr2tx_cent] dSprites: square & pos_x 8..23
                          (0.25 < tx < 0.75)
montero2022_sqr2tx_flnk   [recomb2range/sqr2tx_flnk] dSprites: square & pos_x 8..23 (the
                          complement of ``shape != 1 | tx < 0.25 | tx > 0.75``): on the grid
                          the same set as ``sqr2tx_cent``, as in the code
montero2022_sqr2tx_rs     [recomb2range/sqr2tx_rs] dSprites: square & pos_x 13..27
                          (0.40 < tx < 0.90)
montero2022_sqr2tx_ls     [recomb2range/sqr2tx_ls] dSprites: ellipse (the code's shape == 2,
                          despite its name) & pos_x 0..3 or 19..31 (the complement of
                          ``shape != 2 | 0.10 < tx < 0.60``)
montero2022_odd_ohue      [interp/odd_ohue] 3dshapes: object hue 1, 3, 5, 7, 9 (odd class);
                          trains on the even ones
montero2022_odd_wnf_hue   [interp/odd_wnf_hue] 3dshapes: floor or wall hue odd; trains on
                          floor and wall hue both even
montero2022_shape2ohue_r2e  [recomb2element/shape2ohue] 3dshapes: capsule & object hue 2
                          (class 3 & class 2); named apart from ``montero2022_shape2ohue``,
                          the code's recomb2range variant of the same name
montero2022_shape2fhue    [recomb2range/shape2fhue] 3dshapes: capsule & floor hue 5..9
                          (>= 0.5)
montero2022_shape2orient  [recomb2range/shape2orient] 3dshapes: capsule & orientation 7..14
                          (>= 0 degrees)
montero2022_shape2ohue_flnk  [recomb2range/shape2ohue_flnk] 3dshapes: capsule & object hue
                          3..7 (0.25 < hue < 0.75)
montero2022_cyl2vx        [recomb2range/cyl2vx] MPI3D: cylinder & vertical_axis 0..19 (< 20)
montero2022_bkg2cyl       [recomb2range/bkg2cyl] MPI3D: pyramid or sphere (object_shape >= 4)
                          & salmon background (2)
========================  ===================================================================

Every one trains on the complement of its held-out set, as the code's masks do. In the two
interpolation conditions the held-out hues are never seen in training, so those factors are
left out of the mean probe score (``ood_factors``), as the extrapolation conditions' shifted
factor is; in the recombination ones every value is seen and all are scored.

The code's names for the conditions of :mod:`raystudy.data.splits.papers.montero2022`, where
they differ (``conditions.yaml`` and the run scripts use the second): ``sqr2tx`` is ``shape2tx``,
``missing_fh`` is ``fhue_gt50``, ``cyl2hx`` is ``cyl2horz``, ``redoc2hx`` is ``objc2horz``.
Left out: ``cylinder_to_background`` and ``background2obj_color`` (methods of its ``_MPID3D``
that no table names, so its code cannot run them) and the ``TwoShapes`` set (a dataset
raystudy does not have).

Modifier ``sparse_posY`` (dSprites: pos_y 0, 7, 15, 23, 31): the code defines it beside
``sparse_posX`` but leaves it out of ``DSprites.modifiers``, so there it is refused; here it is
a modifier like the others (:data:`raystudy.data.splits.papers.montero2022.MODIFIERS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Condition:
    """One condition on one grid: the held-out set, the encoder's set (None: the
    complement), and the factors left out of the mean probe score."""

    heldout: dict[str, Any]
    encoder: dict[str, Any] | None = None
    ood_factors: tuple[str, ...] = ()


_SQUARE, _ELLIPSE = [0], [1]  # dSprites shape values 1 and 2
_CAPSULE = [3]  # 3dshapes shape 3
_ODD_10 = [1, 3, 5, 7, 9]
_EVEN_10 = [0, 2, 4, 6, 8]
#: Positions i / 31 kept by the code's sparse_posX and sparse_posY.
SPARSE_POS = [0, 7, 15, 23, 31]

# split name (without the prefix) -> family -> condition
VARIANTS: dict[str, dict[str, Condition]] = {
    # dSprites: recombination to range. Positions i / 31: > 0.5 is 16..31, (0.25, 0.75) is
    # 8..23, (0.40, 0.90) is 13..27, <= 0.10 is 0..3 and >= 0.60 is 19..31; scales
    # 0.5 + 0.1 i: > 0.75 is 3..5.
    "ell2tx": {"dsprites": Condition({"shape": _ELLIPSE, "pos_x": {"ge": 16}})},
    "sqr2scl": {"dsprites": Condition({"shape": _SQUARE, "scale": {"ge": 3}})},
    "sqr2tx_cent": {"dsprites": Condition({"shape": _SQUARE, "pos_x": {"ge": 8, "le": 23}})},
    "sqr2tx_flnk": {"dsprites": Condition({"shape": _SQUARE, "pos_x": {"ge": 8, "le": 23}})},
    "sqr2tx_rs": {"dsprites": Condition({"shape": _SQUARE, "pos_x": {"ge": 13, "le": 27}})},
    "sqr2tx_ls": {
        "dsprites": Condition(
            {"shape": _ELLIPSE, "pos_x": [*range(0, 4), *range(19, 32)]},
        )
    },
    # 3dshapes: interpolation (hue classes), then recombination.
    "odd_ohue": {
        "shapes3d": Condition(
            {"object_hue": _ODD_10},
            encoder={"object_hue": _EVEN_10},
            ood_factors=("object_hue",),
        )
    },
    "odd_wnf_hue": {
        "shapes3d": Condition(
            {"any": [{"floor_hue": _ODD_10}, {"wall_hue": _ODD_10}]},
            encoder={"floor_hue": _EVEN_10, "wall_hue": _EVEN_10},
            ood_factors=("floor_hue", "wall_hue"),
        )
    },
    "shape2ohue_r2e": {"shapes3d": Condition({"shape": _CAPSULE, "object_hue": [2]})},
    # Hues i / 10: >= 0.5 is 5..9, (0.25, 0.75) is 3..7; orientations linspace(-30, 30, 15):
    # >= 0 is 7..14.
    "shape2fhue": {"shapes3d": Condition({"shape": _CAPSULE, "floor_hue": {"ge": 5}})},
    "shape2orient": {"shapes3d": Condition({"shape": _CAPSULE, "orientation": {"ge": 7}})},
    "shape2ohue_flnk": {
        "shapes3d": Condition({"shape": _CAPSULE, "object_hue": {"ge": 3, "le": 7}})
    },
    # MPI3D: values are the indices.
    "cyl2vx": {"mpi3d": Condition({"object_shape": [2], "vertical_axis": {"le": 19}})},
    "bkg2cyl": {"mpi3d": Condition({"object_shape": {"ge": 4}, "background_color": [2]})},
}

_SOURCE = "(Montero et al. 2022; lost-in-latent-space, scripts/configs/datasplits.py)"
VARIANT_DOCS = {
    "ell2tx": "Ellipse x pos_x [recomb2range/ell2tx]: held out, dSprites ellipses at pos_x "
    "> 0.5. " + _SOURCE,
    "sqr2scl": "Square x scale [recomb2range/sqr2scl]: held out, dSprites squares of scale "
    "> 0.75. " + _SOURCE,
    "sqr2tx_cent": "Centred square x pos_x [recomb2range/sqr2tx_cent]: held out, dSprites "
    "squares at 0.25 < pos_x < 0.75. " + _SOURCE,
    "sqr2tx_flnk": "Flanked square x pos_x [recomb2range/sqr2tx_flnk]: held out, dSprites "
    "squares at 0.25 <= pos_x <= 0.75 (on the grid the set of sqr2tx_cent). " + _SOURCE,
    "sqr2tx_rs": "Right-shifted square x pos_x [recomb2range/sqr2tx_rs]: held out, dSprites "
    "squares at 0.40 < pos_x < 0.90. " + _SOURCE,
    "sqr2tx_ls": "Left-shifted window [recomb2range/sqr2tx_ls]: held out, dSprites ellipses "
    "(the code's shape 2) at pos_x <= 0.10 or >= 0.60. " + _SOURCE,
    "odd_ohue": "Odd object hues [interp/odd_ohue]: held out, 3dshapes object hue classes "
    "1, 3, 5, 7, 9; trains on the even ones. " + _SOURCE,
    "odd_wnf_hue": "Odd wall or floor hues [interp/odd_wnf_hue]: held out, 3dshapes with an "
    "odd floor or wall hue class; trains on both even. " + _SOURCE,
    "shape2ohue_r2e": "Capsule x one object hue [recomb2element/shape2ohue]: held out, "
    "3dshapes capsules of object hue class 2. " + _SOURCE,
    "shape2fhue": "Capsule x floor hue [recomb2range/shape2fhue]: held out, 3dshapes capsules "
    "with floor hue >= 0.5. " + _SOURCE,
    "shape2orient": "Capsule x orientation [recomb2range/shape2orient]: held out, 3dshapes "
    "capsules at orientation >= 0 degrees. " + _SOURCE,
    "shape2ohue_flnk": "Capsule x middle object hues [recomb2range/shape2ohue_flnk]: held out, "
    "3dshapes capsules with 0.25 < object hue < 0.75. " + _SOURCE,
    "cyl2vx": "Cylinder x vertical [recomb2range/cyl2vx]: held out, MPI3D cylinders at "
    "vertical_axis < 20. " + _SOURCE,
    "bkg2cyl": "Background x shape [recomb2range/bkg2cyl]: held out, MPI3D pyramids and "
    "spheres on the salmon background. " + _SOURCE,
}
