"""The ``photo`` domain: the same scenes composited onto bundled photographs, then a camera."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split, split_from_spec
from raystudy.data.core.factors import grid_position
from raystudy.data.domains.photo import PHOTOGRAPHS, SCENES, TEXTURES, PhotoShift, photograph
from raystudy.data.splits.registry import SplitOptionError

N = 48


@pytest.fixture(scope="module")
def colour():
    return get_dataset("color_dsprites")


@pytest.fixture(scope="module")
def idx(colour) -> torch.Tensor:
    return torch.from_numpy(colour.factors.sample(N, np.random.default_rng(0)))


@pytest.fixture(scope="module")
def layers(colour, idx) -> dict[str, torch.Tensor]:
    """The sim image and coverage, the photo image, the same photo scene with no object, and
    where the object lands after the camera's pose and lens."""
    image, foreground = colour._render_sim(idx)
    flat = grid_position(idx, colour.factors.sizes)
    shift = colour.photo_shift
    background = 1.0 - foreground
    return {
        "sim": image,
        "foreground": foreground,
        "photo": shift.apply(image, background.clone(), flat),
        "empty": shift.apply(torch.zeros_like(image), torch.ones_like(background), flat),
        "cover": shift.coverage(background.clone(), flat),
    }


@pytest.mark.parametrize("name", ["dsprites", "color_dsprites", "shapes3d"])
def test_photo_renders_in_range_as_8_bit_jpeg_levels(name: str) -> None:
    ds = get_dataset(name, resolution=32)
    assert ds.domains == ("sim", "real", "photo")
    batch = ds.factors.sample(16, np.random.default_rng(3))
    photo = ds.render(batch, domain="photo")
    assert photo.shape == ds.render(batch).shape and photo.dtype == torch.float32
    assert float(photo.min()) >= 0.0 and float(photo.max()) <= 1.0
    # The last step is a JPEG round trip: every value is an 8-bit level.
    assert torch.allclose(photo * 255.0, (photo * 255.0).round(), atol=1e-4)


def test_photo_is_a_function_of_the_indices_and_the_seed(colour, idx) -> None:
    photo = colour.render(idx, domain="photo")
    assert torch.equal(photo, colour.render(idx, domain="photo"))
    assert torch.equal(photo, get_dataset("color_dsprites").render(idx, domain="photo"))
    # Each combination gets its own crop, texture and light, wherever it sits in the batch.
    perm = torch.from_numpy(np.random.default_rng(1).permutation(N))
    assert torch.allclose(colour.render(idx[perm], domain="photo"), photo[perm], atol=1e-6)
    single = torch.cat([colour.render(idx[i : i + 1], domain="photo") for i in range(4)])
    assert torch.allclose(single, photo[:4], atol=1e-6)
    other = get_dataset("color_dsprites", real_seed=7)
    assert (other.render(idx, domain="photo") - photo).abs().mean() > 0.05
    assert torch.equal(other.render(idx), colour.render(idx))  # sim is untouched


def test_the_object_stands_out_from_the_photograph_behind_it(layers) -> None:
    diff = (layers["photo"] - layers["empty"]).abs().mean(dim=1, keepdim=True)
    inside, outside = layers["cover"] > 0.95, layers["cover"] < 0.01
    assert float(diff[inside].mean()) > 0.2
    per_image = torch.stack([diff[i][inside[i]].mean() for i in range(N)])
    assert float(per_image.min()) > 0.1
    # Away from the object the two renders differ only by JPEG blocks near its edges.
    assert float(diff[outside].mean()) < 0.02


def _centroid(weights: torch.Tensor) -> torch.Tensor:
    w = weights[:, 0]
    ys, xs = torch.meshgrid(
        torch.arange(w.shape[1], dtype=torch.float32),
        torch.arange(w.shape[2], dtype=torch.float32),
        indexing="ij",
    )
    total = w.sum(dim=(1, 2))
    return torch.stack([(w * ys).sum((1, 2)) / total, (w * xs).sum((1, 2)) / total], 1)


def test_the_factors_still_place_and_colour_the_object(layers) -> None:
    """Same labels as sim: the object sits where its position factors put it (up to the
    camera's jitter of a few pixels) and keeps its hue (the hues are 30 degrees apart)."""
    diff = (layers["photo"] - layers["empty"]).abs().mean(dim=1, keepdim=True)
    seen = _centroid(diff * (diff > 0.1))
    assert float((seen - _centroid(layers["foreground"])).norm(dim=1).max()) < 6.0

    def hue(rgb: torch.Tensor) -> torch.Tensor:
        r, g, b = rgb.unbind(-1)
        return torch.atan2(math.sqrt(3.0) * (g - b), 2.0 * r - g - b)

    solid, inside = layers["foreground"] > 0.99, layers["cover"] > 0.95
    sim_rgb = torch.stack([layers["sim"][i][:, solid[i, 0]].mean(1) for i in range(N)])
    photo_rgb = torch.stack([layers["photo"][i][:, inside[i, 0]].mean(1) for i in range(N)])
    turn = (hue(sim_rgb) - hue(photo_rgb) + math.pi) % (2.0 * math.pi) - math.pi
    assert float(turn.abs().max()) < math.radians(15.0)


def test_backgrounds_are_photographs_not_the_real_domains_texture(colour, idx, layers) -> None:
    real = colour.render(idx, domain="real")
    photo = layers["photo"]
    free = (layers["cover"] < 0.01).all(dim=0)[0] & (layers["foreground"] < 0.01).all(dim=0)[0]
    # `real` lays one fixed texture behind every object; each photo image has its own crop.
    across_photo = photo[:, :, free].std(dim=0).mean()
    across_real = real[:, :, free].std(dim=0).mean()
    assert float(across_photo) > 0.1 and float(across_photo) > 4.0 * float(across_real)
    # And photographs have edges: far more structure between neighbouring pixels.
    pairs = free[:, 1:] & free[:, :-1]

    def step(x: torch.Tensor) -> float:
        return float((x[..., 1:] - x[..., :-1]).abs()[:, :, pairs].mean())

    assert step(photo) > 1.5 * step(real)


def test_the_scenes_option_picks_the_photographs(colour, idx) -> None:
    """A grey photograph gives grey backgrounds (but for white balance), a colour one not."""
    flat = grid_position(idx, colour.factors.sizes)
    empty = torch.zeros((N, 3, 64, 64))
    spread = {}
    for scene in ("camera", "flower"):
        shift = PhotoShift(3, 64, scenes=(scene,))
        out = shift.apply(empty, torch.ones((N, 1, 64, 64)), flat)
        spread[scene] = float((out.amax(dim=1) - out.amin(dim=1)).mean())
    assert spread["camera"] < 0.03 and spread["flower"] > 0.15


def test_every_photograph_loads_from_its_package() -> None:
    assert set(SCENES) | set(TEXTURES) <= set(PHOTOGRAPHS)
    for name in PHOTOGRAPHS:
        image = photograph(name)
        assert image.dtype == np.float32 and image.shape[0] == 3 and min(image.shape[1:]) >= 300
        assert float(image.min()) >= 0.0 and float(image.max()) <= 1.0 and image.std() > 0.05


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"channels": 2}, "1 or 3 channels, got 2"),
        ({"resolution": 4}, "resolution of 8 or more"),
        ({"seed": -1}, r"seed must be in 0\.\."),
        ({"scenes": ("lena",)}, "unknown photograph 'lena'.*china"),
        ({"textures": ()}, "textures must be a non-empty list"),
        ({"scenes": "china"}, "scenes must be a non-empty list"),
    ],
)
def test_bad_options_are_refused_with_what_is_allowed(kwargs, message) -> None:
    args = {"channels": 3, "resolution": 64, **kwargs}
    with pytest.raises(ValueError, match=message):
        PhotoShift(**args)


def test_an_unknown_domain_names_photo_among_the_allowed(colour, idx) -> None:
    with pytest.raises(ValueError, match="no domain 'photos'; allowed domains: sim, real, photo"):
        colour.render(idx, domain="photos")


def test_dittadi_hues_option_adds_an_ood2_scenario_in_photo(colour) -> None:
    plain = get_split("dittadi_hues", colour)
    split = get_split("dittadi_hues", colour, {"photo": True})
    assert list(split.scenarios) == [*plain.scenarios, "ood2_photo"]
    scn, ood2_b = split.scenarios["ood2_photo"], split.scenarios["ood2_b"]
    assert scn.probe_domains == ("sim", "photo")
    assert (scn.train, scn.test, scn.ood_factors) == (ood2_b.train, ood2_b.test, ())
    # The probes are scored on the very combinations OOD2-B uses, in another rendering.
    rng = np.random.default_rng(0)
    drawn = split.sample("ood2_photo/test", 200, rng)
    assert np.array_equal(split.mask("encoder", drawn), np.ones(200, dtype=bool))
    with pytest.raises(SplitOptionError, match="photo must be true or false, got 'yes'"):
        get_split("dittadi_hues", colour, {"photo": "yes"})


def test_a_split_written_in_the_spec_can_test_in_photo(colour) -> None:
    spec = {
        "encoder": {"hue": [0, 2]},
        "scenarios": {
            "to_photo": {"train": {"hue": [0]}, "test": {"hue": [0]}, "train_domain": "sim"}
        },
    }
    spec["scenarios"]["to_photo"]["domain"] = "photo"
    split = split_from_spec(spec, colour)
    assert split.scenarios["to_photo"].probe_domains == ("sim", "photo")
    spec["scenarios"]["to_photo"]["domain"] = "photos"
    with pytest.raises(ValueError, match="no domain 'photos'"):
        split_from_spec(spec, colour)
