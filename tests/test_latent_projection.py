"""The latent projection of held-out codes (Montero et al. 2022): which factors a held-out set
excludes, which code dimensions are tied to them, and the figure, on a known encoder."""

from __future__ import annotations

import numpy as np

from raystudy.data import get_dataset, get_split
from raystudy.latent_projection import (
    excluded_factors,
    projected_factors,
    projection_figure,
    tied_dimensions,
)


def test_excluded_factors_of_the_papers_conditions() -> None:
    ds = get_dataset("shapes3d")
    sizes = ds.factors.sizes
    names = ds.factors.names

    def excluded(name: str) -> list[str]:
        held = get_split(name, ds).sample("heldout", 5_000, 0)
        return [names[k] for k in excluded_factors(held, sizes)]

    # capsule (1 of 4 shapes) with object hue 5..9 (5 of 10): shape is the more restricted
    assert excluded("montero2022_shape2ohue") == ["shape", "object_hue"]
    assert excluded("montero2022_fhue_gt50") == ["floor_hue"]
    held = get_split("montero2022_fhue_gt50", ds).sample("heldout", 5_000, 0)
    # one excluded factor: the other axis is the first factor that varies, wall_hue
    assert [names[k] for k in projected_factors(held, sizes)] == ["floor_hue", "wall_hue"]


def test_tied_dimensions_recover_a_known_code() -> None:
    rng = np.random.default_rng(0)
    points = rng.integers(0, 10, size=(400, 3))
    # code dim 2 reads factor 0, dim 0 reads factor 2 (negatively), dim 1 is noise
    codes = np.stack(
        [-points[:, 2] + 0.3 * rng.normal(size=400), rng.normal(size=400), points[:, 0] * 0.1], 1
    )
    assert tied_dimensions(codes, points, [0, 2]) == [2, 0]
    # two factors read by one dimension: the weaker gets another dimension
    shared = np.stack([points[:, 0] + points[:, 1] * 0.5, rng.normal(size=400)], 1)
    dims = tied_dimensions(shared, points, [0, 1])
    assert dims[0] == 0 and dims[1] == 1


def test_the_figure_shows_both_sets_on_the_chosen_dimensions() -> None:
    rng = np.random.default_rng(1)
    train, held = rng.normal(size=(50, 4)), rng.normal(size=(20, 4)) + 3.0
    fig = projection_figure(train, held, [3, 1], ["z3 (a)", "z1 (b)"], "t")
    ax = fig.axes[0]
    seen, unseen = ax.collections
    assert np.allclose(seen.get_offsets(), train[:, [3, 1]])
    assert np.allclose(unseen.get_offsets(), held[:, [3, 1]])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("z3 (a)", "z1 (b)")
    one = projection_figure(train, held, [2], ["z2 (a)"], "t").axes[0]
    assert np.allclose(one.collections[1].get_offsets()[:, 1], held[:, 2])
