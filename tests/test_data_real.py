"""The ``real`` domain: the same scenes through a fixed, seeded shift of the renderer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset
from raystudy.data.real_domain import NOISE_BANK, RealShift, binomial_blur, mix32

PROCEDURAL = ["dsprites", "color_dsprites", "shapes3d", "finger", "mpi3d"]


@pytest.fixture(scope="module", params=PROCEDURAL)
def ds(request):
    return get_dataset(request.param)


@pytest.fixture(scope="module")
def batch(ds) -> np.ndarray:
    return ds.factors.sample(48, np.random.default_rng(0))


def test_every_procedural_dataset_renders_real(ds, batch) -> None:
    assert ds.domains == ("sim", "real")
    real = ds.render(batch, domain="real")
    assert real.shape == ds.render(batch).shape and real.dtype == torch.float32
    assert float(real.min()) >= 0.0 and float(real.max()) <= 1.0


def test_real_differs_measurably_but_shows_the_same_scene(ds, batch) -> None:
    sim, real = ds.render(batch), ds.render(batch, domain="real")
    assert (sim - real).abs().mean() > 0.03
    # Same scene: each real image correlates with its own sim image far more than with
    # another scene's.
    s = sim.flatten(1) - sim.flatten(1).mean(1, keepdim=True)
    r = real.flatten(1) - real.flatten(1).mean(1, keepdim=True)
    corr = (s / s.norm(dim=1, keepdim=True)) @ (r / r.norm(dim=1, keepdim=True)).T
    own = corr.diagonal()
    assert own.min() > 0.6
    others = corr[~torch.eye(len(batch), dtype=torch.bool)].view(len(batch), -1)
    assert torch.all(own > others.max(dim=1).values)


def test_real_is_a_function_of_the_indices(ds, batch) -> None:
    real = ds.render(batch, domain="real")
    assert torch.equal(real, ds.render(batch, domain="real"))
    assert torch.equal(real, get_dataset(ds.name).render(batch, domain="real"))
    # The noise is keyed by the combination, not by its place in the batch.
    perm = np.random.default_rng(1).permutation(len(batch))
    assert torch.allclose(ds.render(batch[perm], domain="real"), real[perm], atol=1e-6)
    singles = torch.cat([ds.render(batch[i : i + 1], domain="real") for i in range(4)])
    assert torch.allclose(singles, real[:4], atol=1e-6)


def test_real_seed_picks_another_fixed_domain(ds, batch) -> None:
    other = get_dataset(ds.name, real_seed=1)
    a, b = ds.render(batch, domain="real"), other.render(batch, domain="real")
    assert (a - b).abs().mean() > 0.01
    assert torch.equal(b, get_dataset(ds.name, real_seed=1).render(batch, domain="real"))
    assert torch.equal(ds.render(batch), other.render(batch))  # sim is untouched


def test_identical_sim_images_get_different_sensor_noise() -> None:
    ds = get_dataset("dsprites")
    # A square turned by 90 degrees (10 steps) is the same image, but another combination.
    idx = np.array([[0, 5, 0, 16, 16], [0, 5, 10, 16, 16]])
    sim = ds.render(idx)
    assert torch.allclose(sim[0], sim[1], atol=1e-5)
    real = ds.render(idx, domain="real")
    gap = real[0] - real[1]
    # Two independent noise fields of std s differ by std s * sqrt(2); s is 0.025..0.035.
    assert 0.025 * np.sqrt(2) * 0.7 < float(gap.std()) < 0.035 * np.sqrt(2) * 1.3
    assert abs(float(gap.mean())) < 0.01


# --- the components of the shift --------------------------------------------------------------


def shift_of(channels: int) -> RealShift:
    return RealShift(channels=channels, resolution=64, seed=0)


def test_lighting_gradient_and_vignette_vary_across_the_image() -> None:
    shift = shift_of(1)
    grey = torch.full((256, 1, 64, 64), 0.5)
    out = shift.apply(grey, torch.zeros(256, 1, 64, 64), torch.arange(256))
    mean = out.mean(dim=0)[0]  # noise averages out over the batch
    assert float(mean.max() - mean.min()) > 0.1
    corners = torch.stack([mean[:8, :8].mean(), mean[:8, -8:].mean(), mean[-8:, :8].mean()])
    centre = mean[28:36, 28:36].mean()
    assert float(centre) > float(corners.min())  # the vignette darkens some corner


def test_colour_cast_moves_channels_apart() -> None:
    shift = shift_of(3)
    grey = torch.full((128, 3, 64, 64), 0.5)
    out = shift.apply(grey, torch.zeros(128, 1, 64, 64), torch.arange(128))
    per_channel = out.mean(dim=(0, 2, 3))
    assert float(per_channel.max() - per_channel.min()) > 0.02


def test_background_texture_only_on_background() -> None:
    shift = shift_of(3)
    black = torch.zeros(64, 3, 64, 64)
    flat = torch.arange(64)
    textured = shift.apply(black, torch.ones(64, 1, 64, 64), flat)
    bare = shift.apply(black, torch.zeros(64, 1, 64, 64), flat)
    texture = (textured - bare).mean(dim=0)
    assert float(texture.mean()) > 0.03
    assert float(texture.std()) > 0.01  # a pattern, not a constant offset


@pytest.mark.parametrize("passes", [1, 3])
def test_binomial_blur_is_a_discrete_gaussian_with_replicated_edges(passes: int) -> None:
    impulse = torch.zeros(1, 1, 33, 33, dtype=torch.float64)
    impulse[0, 0, 16, 16] = 1.0
    kernel = binomial_blur(impulse, passes)[0, 0]
    assert float(kernel.sum()) == pytest.approx(1.0)  # brightness is kept
    assert torch.allclose(kernel, kernel.flip(0)) and torch.allclose(kernel, kernel.T)
    offsets = torch.arange(33, dtype=torch.float64) - 16
    variance = float((kernel.sum(dim=0) * offsets**2).sum())
    assert variance == pytest.approx(passes / 2)  # each pass adds 1/2 pixel^2 per axis
    assert torch.count_nonzero(kernel.sum(dim=0)) == 2 * passes + 1
    # Replicated edges: a constant image stays constant, corners included.
    flat = torch.full((2, 3, 8, 8), 0.7)
    assert torch.allclose(binomial_blur(flat, passes), flat)
    step = (torch.arange(16) >= 8).float().expand(1, 1, 4, 16)
    row = binomial_blur(step)[0, 0, 0]
    assert 0.0 < float(row[7]) < 0.5 < float(row[8]) < 1.0  # the edge is softened
    assert float(row[0]) == 0.0 and float(row[15]) == 1.0
    assert float(step.sum()) == 32.0  # the input is left alone


def test_blur_widens_with_the_resolution() -> None:
    assert RealShift(3, 64)._device_tables(torch.device("cpu")).blur_passes == 1
    assert RealShift(3, 128)._device_tables(torch.device("cpu")).blur_passes == 4


def test_noise_hash_spreads_over_the_bank() -> None:
    h = mix32(torch.arange(20_000))
    assert torch.equal(h, mix32(torch.arange(20_000)))
    counts = torch.bincount(h % NOISE_BANK, minlength=NOISE_BANK).float()
    assert float(counts.min()) > 0.6 * 20_000 / NOISE_BANK
    assert int(h.max()) < 2**32 and int(h.min()) >= 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_real_renders_on_the_device_of_the_indices(ds, batch) -> None:
    on_gpu = ds.render(torch.from_numpy(batch).cuda(), domain="real")
    assert on_gpu.device.type == "cuda"
    assert torch.allclose(on_gpu.cpu(), ds.render(batch, domain="real"), atol=1e-4)
    sim = ds.render(torch.from_numpy(batch).cuda())
    assert torch.allclose(sim.cpu(), ds.render(batch), atol=1e-4)
    ok = ds.feasible(torch.from_numpy(batch).cuda())
    assert ok.device.type == "cuda" and torch.equal(ok.cpu(), ds.feasible(batch))
