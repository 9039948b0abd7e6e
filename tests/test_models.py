"""Model zoo: architectures, input noise, the registry and building from a config, costs."""

from __future__ import annotations

import pytest
import torch

from raystudy.models import (
    OBJECTIVES,
    build,
    build_model,
    example_batch,
    flops_per_step,
    get_objective,
    num_parameters,
    objective_from_config,
)
from raystudy.models.noise import add_input_noise
from raystudy.models.resnet import GatedResidualBlock
from raystudy.models.vae import gaussian_kl, gaussian_kl_between
from raystudy.spec import ModelConfig

# One torch thread (conftest.py): small batches on shared cores.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


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


def test_conv_at_32px_drops_one_stride_2_stage_a_side_and_keeps_the_bottleneck() -> None:
    small = build_model("conv", 3, latent_dim=7, resolution=32)
    x = torch.rand(4, 3, 32, 32)
    mu, logvar = small.encode(x)
    assert mu.shape == logvar.shape == (4, 7)
    assert small.decode(mu).shape == (4, 3, 32, 32)
    convs = [m for m in small.encoder.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.kernel_size[0] for c in convs] == [4, 2, 2]
    deconvs = [m for m in small.decoder.modules() if isinstance(m, torch.nn.ConvTranspose2d)]
    assert [c.out_channels for c in deconvs] == [32, 32, 3]
    # Same FC layers either side of the 64x4x4 bottleneck as at 64 px.
    big = build_model("conv", 3, latent_dim=7, resolution=64)
    linear = [m.weight.shape for m in small.modules() if isinstance(m, torch.nn.Linear)]
    assert linear == [m.weight.shape for m in big.modules() if isinstance(m, torch.nn.Linear)]
    assert num_parameters(small) < num_parameters(big)
    with pytest.raises(ValueError, match="32x32 or 64x64 images, got 48"):
        build_model("conv", 3, latent_dim=7, resolution=48)


@pytest.mark.parametrize("resolution", [64, 128])
def test_resnet_shapes_and_its_identity_start(resolution: int) -> None:
    torch.manual_seed(0)
    model = build_model("resnet", 3, latent_dim=6, resolution=resolution)
    x = torch.rand(2, 3, resolution, resolution)
    mu, logvar = model.encode(x)
    assert mu.shape == logvar.shape == (2, 6)
    assert model.decode(mu).shape == (2, 3, resolution, resolution)
    stem = next(m for m in model.encoder.modules() if isinstance(m, torch.nn.Conv2d))
    assert stem.kernel_size == (5, 5) and stem.stride == (2, 2) and stem.out_channels == 64
    one_by_one = [
        m.out_channels
        for m in model.encoder.modules()
        if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (1, 1)
    ]
    assert one_by_one == [128, 256]  # the channel changes 64 -> 128 -> 256
    blocks = [m for m in model.modules() if isinstance(m, GatedResidualBlock)]
    assert blocks and all(float(b.gate.detach()) == 0.0 for b in blocks)
    h = torch.randn(1, 64, 8, 8)
    assert torch.equal(blocks[0](h), h)  # gate 0: the block starts as the identity
    assert isinstance(model.encoder.norm, torch.nn.LayerNorm)
    # Small-init log-variance head: every initial variance is close to 1.
    assert logvar.abs().max() < 0.1 < mu.abs().max()
    if resolution == 128:  # Dittadi et al.'s Table 3: 10 residual blocks, 23 conv layers
        encoder_blocks = [m for m in model.encoder.modules() if isinstance(m, GatedResidualBlock)]
        convs = [m for m in model.encoder.modules() if isinstance(m, torch.nn.Conv2d)]
        assert [b.conv1.in_channels for b in encoder_blocks] == [64] * 2 + [128] * 4 + [256] * 4
        assert len(encoder_blocks) == 10 and len(convs) == 23


def test_resnet_at_128px_has_the_papers_parameter_count() -> None:
    """Dittadi et al. (2021), Sec. 4: "The total number of parameters is approximately 16.3M"."""
    model = build_model("resnet", 3, latent_dim=10, resolution=128)
    assert abs(num_parameters(model) - 16.3e6) < 0.02 * 16.3e6


def test_resnet_refuses_other_resolutions() -> None:
    with pytest.raises(ValueError, match="64, 128"):
        build_model("resnet", 1, 4, resolution=32)


def test_mlp_is_higgins_1200_1200() -> None:
    model = build_model("mlp", 1, latent_dim=5)
    x = torch.rand(3, 1, 64, 64)
    mu, _ = model.encode(x)
    assert mu.shape == (3, 5) and model.decode(mu).shape == (3, 1, 64, 64)
    widths = [m.out_features for m in model.encoder.modules() if isinstance(m, torch.nn.Linear)]
    assert widths == [1200, 1200, 5, 5]
    widths = [m.out_features for m in model.decoder.modules() if isinstance(m, torch.nn.Linear)]
    assert widths == [1200, 1200, 1200, 64 * 64]


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


def test_input_noise_is_seedable_zero_mean_and_leaves_the_input_alone() -> None:
    x = torch.full((64, 3, 64, 64), 0.5)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    a, b = add_input_noise(x, generator=g1), add_input_noise(x, generator=g2)
    assert torch.equal(a, b) and torch.equal(x, torch.full_like(x, 0.5))
    assert (a - x).abs().mean() > 0.02 and abs(float((a - x).mean())) < 0.01
    # the greyscale component is shared by the channels: channel differences are pixel noise only
    grey = add_input_noise(x, sigma_pixel=0.0, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(grey[:, 0], grey[:, 1]) and not torch.allclose(grey, x)
    # ...and smooth: a 4x4 field upsampled x16, so neighbouring pixels barely differ
    step = (grey[..., 1:] - grey[..., :-1]).abs().max()
    assert step < 0.25 * (grey - x).abs().max()
    pix = add_input_noise(x, sigma_grey=0.0, sigma_pixel=0.2, generator=g1)
    assert abs(float((pix - x).std()) - 0.2) < 0.01
    # unclipped by default (zero mean on black pixels); clip=True keeps [0, 1]
    black = torch.zeros(4, 1, 64, 64)
    assert add_input_noise(black).min() < 0
    clipped = add_input_noise(black, clip=True)
    assert clipped.min() >= 0 and clipped.max() <= 1


def test_unknown_names_and_hyperparameters() -> None:
    with pytest.raises(ValueError, match="did you mean 'beta_vae'"):
        get_objective("beta_vea")
    with pytest.raises(ValueError, match="unknown architecture"):
        build_model("transformer", 1, 2)
    with pytest.raises(ValueError, match="reads: gamma"):
        get_objective("factor_vae", beta=2.0)
    with pytest.raises(ValueError, match="'random'"):
        get_objective("ada_gvae", k=0)
    with pytest.raises(ValueError, match="kl_mode"):
        get_objective("ml_vae", kl_mode="js")


def test_every_objective_builds_from_a_config_reading_only_its_fields() -> None:
    expected = {
        "vae",
        "beta_vae",
        "annealed_vae",
        "factor_vae",
        "dip_vae_i",
        "dip_vae_ii",
        "beta_tcvae",
        "ada_gvae",
        "ml_vae",
        "gt_decoder",
        "supervised",
        "wae",
        "cascade_vae",
        "lie_group_vae",
        "composition",
        "info_vae",
        "slow_vae",
        "pcl",
        "supervised_pretrained",
    }
    assert set(OBJECTIVES.names()) == expected
    cfg = dict(beta=6.0, c_max=50.0, iteration_threshold=10, lambda_od=2.0, kl_mode="symmetric_kl")
    annealed = objective_from_config(ModelConfig(objective="annealed_vae", **cfg))
    assert (annealed.gamma, annealed.c_max, annealed.iteration_threshold) == (1000.0, 50.0, 10)
    assert objective_from_config(ModelConfig(objective="factor_vae")).gamma == 10.0
    assert objective_from_config(ModelConfig(objective="factor_vae", gamma=40)).gamma == 40.0
    dip1 = objective_from_config(ModelConfig(objective="dip_vae_i", **cfg))
    dip2 = objective_from_config(ModelConfig(objective="dip_vae_ii", **cfg))
    assert (dip1.lambda_od, dip1.lambda_d, dip2.lambda_d) == (2.0, 20.0, 2.0)
    weak = objective_from_config(ModelConfig(objective="ml_vae", k="random", **cfg))
    assert (weak.beta, weak.kl_mode, weak.pair_k) == (6.0, "symmetric_kl", "random")
    assert objective_from_config(ModelConfig(objective="vae", **cfg)).beta == 1.0
    assert objective_from_config(ModelConfig(objective="beta_tcvae", **cfg)).beta == 6.0
    montero = dict(
        lambda_mmd=3.0,
        beta_low=1.0,
        release_every=5,
        lambda_hessian=8.0,
        discrete_from=7,
        encoder_features_prob=0.5,
    )
    wae = objective_from_config(ModelConfig(objective="wae", **montero))
    assert (wae.lambda_mmd, wae.lambda_logvar) == (3.0, 0.001)
    cascade = objective_from_config(ModelConfig(objective="cascade_vae", **montero))
    assert (cascade.beta_low, cascade.beta_high, cascade.release_every) == (1.0, 10.0, 5)
    assert (cascade.categories, cascade.discrete_from, cascade.category_balance) == (3, 7, 0.001)
    lie = objective_from_config(ModelConfig(objective="lie_group_vae", beta=2.0, **montero))
    assert (lie.lambda_group_recon, lie.encoder_features_prob) == (0.1, 0.5)
    assert (lie.beta, lie.lambda_hessian, lie.lambda_commute, lie.group_matrix_dim) == (
        2.0,
        8.0,
        0.0,
        10,
    )


def test_reference_objectives_get_one_code_dimension_per_factor() -> None:
    for name, ground_truth in [("gt_decoder", True), ("supervised", False), ("vae", False)]:
        model, _ = build(ModelConfig(objective=name, latent_dim=10), 3, 64, num_factors=6)
        assert model.latent_dim == (10 if name == "vae" else 6)
        assert model.code_is_ground_truth is ground_truth


def test_parameter_count_and_flops_per_step() -> None:
    model, objective = build(ModelConfig(objective="beta_vae"), 1, 64, num_factors=5)
    assert num_parameters(model) == sum(p.numel() for p in model.parameters())
    single = flops_per_step(
        model, objective, example_batch(1, 64, 5, 4, False, torch.device("cpu"))
    )
    double = flops_per_step(
        model, objective, example_batch(1, 64, 5, 8, False, torch.device("cpu"))
    )
    assert single > 0 and double == 2 * single  # linear in the batch size
    assert all(p.grad is None for p in model.parameters())  # counting leaves no gradients
    weak_model, weak = build(ModelConfig(objective="ada_gvae"), 1, 64, num_factors=5)
    pairs = flops_per_step(weak_model, weak, example_batch(1, 64, 5, 4, True, torch.device("cpu")))
    assert abs(pairs / single - 2.0) < 0.01  # a batch of 4 pairs is 8 images
    fmodel, factor = build(ModelConfig(objective="factor_vae"), 1, 64, num_factors=5)
    with_discriminator = flops_per_step(
        fmodel, factor, example_batch(1, 64, 5, 4, False, torch.device("cpu"))
    )
    assert with_discriminator > single  # the discriminator's passes count too
