"""Which paper grid a dataset is, by its factor names: a split defined on the dSprites grid
applies to ``dsprites`` and ``dsprites_file`` alike, since both use the same names and order."""

from __future__ import annotations

from raystudy.data.core.base import GroundTruthDataset

FAMILIES: dict[str, tuple[str, ...]] = {
    "dsprites": ("shape", "scale", "orientation", "pos_x", "pos_y"),
    "shapes3d": ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation"),
    "mpi3d": (
        "object_color",
        "object_shape",
        "object_size",
        "camera_height",
        "background_color",
        "horizontal_axis",
        "vertical_axis",
    ),
    # Montero et al. (2022)'s Spriteworld sets (raystudy.data.sources.procedural.circles), in
    # their code's order.
    "circles": ("pos_x", "pos_y"),
    "simple": ("pos_x", "pos_y", "shape"),
}


def family_of(ds: GroundTruthDataset, split: str, supported: tuple[str, ...]) -> str:
    """The family (a key of :data:`FAMILIES`) whose factor names ``ds`` has, in order;
    ValueError naming the split, the dataset and the supported grids otherwise."""
    names = tuple(ds.factors.names)
    for family in supported:
        if FAMILIES[family] == names:
            return family
    grids = "; ".join(f"{f}: {', '.join(FAMILIES[f])}" for f in supported)
    raise ValueError(
        f"split {split!r} is defined on the grids of {', '.join(supported)}; dataset "
        f"{ds.name!r} has factors {', '.join(names)} (supported factor orders: {grids})"
    )


def require_sizes(ds: GroundTruthDataset, split: str, family: str, sizes: tuple[int, ...]) -> None:
    """ValueError unless ``ds``'s factor sizes are ``sizes``, the grid ``split`` is written
    for (a dSprites with ``orientation_bins`` has the family's names but not its grid)."""
    if tuple(ds.factors.sizes) != sizes:
        raise ValueError(
            f"split {split!r} is written for the official {family} grid "
            f"{dict(zip(FAMILIES[family], sizes, strict=True))}; dataset "
            f"{ds.name!r} has sizes {ds.factors.sizes}"
        )
