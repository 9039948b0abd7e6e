"""Model zoo: the reference conv architecture's shapes and the objectives' defining behaviour."""

from __future__ import annotations

import pytest
import torch

from raystudy.models import Batch, build_model, get_objective
from raystudy.models.noise import add_input_noise
from raystudy.models.objectives.ada_gvae import adaptive_average
from raystudy.models.vae import gaussian_kl, gaussian_kl_between


@pytest.mark.parametrize("channels", [1, 3])
def test_conv_vae_shapes_match_disentanglement_lib(channels: int) -> None:
    model = build_model("conv", channels, latent_dim=7)
    x = torch.rand(5, channels, 64, 64)
    mu, logvar = model.encode(x)
    assert mu.shape == logvar.shape == (5, 7)
    assert model.decode(mu).shape == (5, channels, 64, 64)
    convs = [m for m in model.encoder.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 32, 64, 64]
    assert [c.kernel_size[0] for c in convs] == [4, 4, 2, 2]
    deconvs = [m for m in model.decoder.modules() if isinstance(m, torch.nn.ConvTranspose2d)]
    assert [c.out_channels for c in deconvs] == [64, 32, 32, channels]


def test_kl_formulas() -> None:
    mu, logvar = torch.zeros(2, 3), torch.zeros(2, 3)
    assert torch.allclose(gaussian_kl(mu, logvar), torch.zeros(2, 3))
    assert torch.allclose(gaussian_kl_between(mu, logvar, mu, logvar), torch.zeros(2, 3))
    # KL(N(1,1) || N(0,1)) = 0.5
    assert torch.allclose(gaussian_kl(torch.ones(1, 1), torch.zeros(1, 1)), torch.tensor(0.5))
    # against torch.distributions for unequal variances
    m1, l1, m2, l2 = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(m1, (0.5 * l1).exp()),
        torch.distributions.Normal(m2, (0.5 * l2).exp()),
    )
    assert torch.allclose(gaussian_kl_between(m1, l1, m2, l2), ref, atol=1e-5)


def test_ada_gvae_averages_only_the_dimensions_that_did_not_change() -> None:
    mu1 = torch.tensor([[0.0, 1.0, -1.0, 0.5]])
    mu2 = mu1.clone()
    mu2[0, 2] = 3.0  # one factor changed -> one latent moved a lot
    mu2[0, 0] = 0.05  # small noise elsewhere
    logvar = torch.full_like(mu1, -2.0)
    a_mu, _, b_mu, _ = adaptive_average(mu1, logvar, mu2, logvar.clone())
    assert a_mu[0, 2] == mu1[0, 2] and b_mu[0, 2] == mu2[0, 2]  # kept apart
    shared = [0, 1, 3]
    assert torch.allclose(a_mu[0, shared], b_mu[0, shared])
    assert torch.isclose(a_mu[0, 0], torch.tensor(0.025))


@pytest.mark.parametrize("name", ["beta_vae", "ada_gvae"])
def test_objectives_lower_their_loss_on_a_fixed_batch(name: str) -> None:
    torch.manual_seed(0)
    model = build_model("conv", 1, 4)
    objective = get_objective(name, beta=2.0)
    x = torch.zeros(8, 1, 64, 64)
    for i in range(8):  # a white square moving along the diagonal: learnable structure
        x[i, 0, 6 * i : 6 * i + 16, 6 * i : 6 * i + 16] = 1.0
    batch = Batch(x, x, x.flip(0), x.flip(0)) if objective.pairs else Batch(x, x)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    first = objective(model, batch).loss.item()
    for _ in range(30):
        terms = objective(model, batch)
        optimizer.zero_grad()
        terms.loss.backward()
        optimizer.step()
    assert terms.loss.item() < 0.8 * first
    # beta weighs the KL term: the loss is recon + beta * kl
    assert torch.isclose(terms.loss, terms.recon + 2.0 * terms.kl)


def test_ada_gvae_refuses_unpaired_batches() -> None:
    x = torch.rand(2, 1, 64, 64)
    with pytest.raises(ValueError, match="pairs"):
        get_objective("ada_gvae")(build_model("conv", 1, 3), Batch(x, x))


def test_input_noise_perturbs_within_range_and_is_seedable() -> None:
    x = torch.full((2, 3, 64, 64), 0.5)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    a, b = add_input_noise(x, generator=g1), add_input_noise(x, generator=g2)
    assert torch.equal(a, b)
    assert a.min() >= 0 and a.max() <= 1 and (a - x).abs().mean() > 0.02
    # the greyscale component is shared by the channels: channel differences are pixel noise only
    grey = add_input_noise(x, sigma_pixel=0.0, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(grey[:, 0], grey[:, 1]) and not torch.allclose(grey, x)


def test_unknown_names() -> None:
    with pytest.raises(ValueError, match="did you mean 'beta_vae'"):
        get_objective("beta_vea")
    with pytest.raises(ValueError, match="unknown architecture"):
        build_model("transformer", 1, 2)
