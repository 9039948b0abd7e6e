"""Schott et al.'s (2022) models: SlowVAE and PCL against computations written out here, their
training as a stack, the networks' layouts and biases, and ImageNet weights files (written by
the tests) loaded, refused when absent, and refused when they are another network's."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
import scipy.stats
import torch
from mlflow.tracking import MlflowClient
from tiny import SMOKE, tiny
from torch import nn

from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.models import VAE, Batch, build, build_model, get_objective, num_parameters
from raystudy.models.imagenet_nets import (
    DenseNetBackbone,
    ResNetBackbone,
    load_imagenet_weights,
)
from raystudy.models.objectives.pcl import CODE_LOGVAR, PCLHead, permutation_contrast
from raystudy.models.objectives.slow_vae import laplace_cross_entropy, slow_kl_laplace
from raystudy.models.p4cnn import GroupConv, LiftingConv
from raystudy.models.vae import HeadedEncoder
from raystudy.models.vanilla_cnn import add_coordinates
from raystudy.spec import ModelConfig, SpecError, TrainConfig, TrialConfig
from raystudy.tags import ARTIFACT_ERROR_TAG, ERROR_TAG
from raystudy.training.loop import BatchSampler, train
from raystudy.training.stacked import check_stackable, train_stacked
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

CPU = torch.device("cpu")
SEEDS = [3, 11]
D, PIX = 3, 16  # latent dimensions; pixels of a 1x4x4 image

# One torch thread (conftest.py): small batches on shared cores.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class FixedNoiseVAE(VAE):
    """A linear VAE on 4x4 images whose posterior noise the test sets."""

    def __init__(self) -> None:
        encoder = nn.Sequential(nn.Flatten(), nn.Linear(PIX, 2 * D))
        decoder = nn.Sequential(nn.Linear(D, PIX), nn.Unflatten(1, (1, 4, 4)))
        super().__init__(encoder, decoder, D)
        self.eps = torch.zeros(0, D)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return h[:, :D], h[:, D:]

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + self.eps[: mu.shape[0]] * (0.5 * logvar).exp()


def pairs(n: int = 5, seed: int = 0) -> tuple[FixedNoiseVAE, Batch]:
    torch.manual_seed(seed)
    model = FixedNoiseVAE()
    model.eps = torch.randn(2 * n, D)
    x1 = (torch.rand(n, 1, 4, 4) > 0.5).float()
    x2 = (torch.rand(n, 1, 4, 4) > 0.5).float()
    return model, Batch(x1, x1, x2, x2)


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


# -- SlowVAE --------------------------------------------------------------------------------


def test_laplace_cross_entropy_is_the_expectation_it_claims() -> None:
    mean = np.array([-1.5, 0.0, 0.3, 2.0])
    logvar = np.array([-1.0, 0.0, 0.5, -2.0])
    rate = 6.0
    z = np.random.default_rng(0).normal(mean, np.exp(0.5 * logvar), size=(400_000, 4))
    monte_carlo = (-np.log(rate / 2) + rate * np.abs(z)).mean(axis=0)
    exact = laplace_cross_entropy(torch.tensor(mean), torch.tensor(logvar), rate).numpy()
    np.testing.assert_allclose(exact, monte_carlo, atol=0.05)


@pytest.mark.parametrize(("beta", "gamma", "rate"), [(1.0, 10.0, 6.0), (4.0, 2.0, 1.5)])
def test_slow_vae_loss_is_half_the_released_codes(beta: float, gamma: float, rate: float) -> None:
    model, batch = pairs()
    with torch.no_grad():
        terms = get_objective("slow_vae", beta=beta, gamma=gamma, rate=rate)(model, batch)
    # The released code's terms, in its own names, over the 2n images (first frames first).
    x = torch.cat([batch.inputs, batch.inputs2])
    mu, logvar = (np_(t) for t in model.encode(x))
    var = np.exp(logvar)
    z = mu + np_(model.eps) * np.sqrt(var)
    s = 1.0 / (1.0 + np.exp(-np_(model.decode(torch.from_numpy(z).float()))))
    xs = np_(x)
    recon = -(xs * np.log(s) + (1 - xs) * np.log(1 - s)).reshape(len(xs), -1).sum(1).mean()
    normal_entropy = (0.5 * (logvar + np.log(2 * np.pi * np.e))).sum(1).mean()
    cross_ent_normal = (0.5 * (mu**2 + var) + np.log(np.sqrt(2 * np.pi))).sum(1).mean()

    def cross_ent_laplace(m: np.ndarray, lv: np.ndarray) -> np.ndarray:
        sigma = np.exp(0.5 * lv)
        return (
            -np.log(rate / 2)
            + rate * sigma * np.sqrt(2 / np.pi) * np.exp(-(m**2) / (2 * sigma**2))
            - rate * m * (1 - 2 * scipy.stats.norm.cdf(m / sigma))
        )

    n = len(batch.inputs)
    laplace = (
        (
            cross_ent_laplace(mu[:n] - mu[n:], logvar[:n])
            + cross_ent_laplace(mu[n:] - mu[:n], logvar[n:])
        )
        .sum(1)
        .mean()
    )
    kl_normal = cross_ent_normal - normal_entropy
    kl_laplace = laplace - normal_entropy
    theirs = 2 * recon + beta * kl_normal + gamma * kl_laplace
    assert float(terms.loss) == pytest.approx(theirs / 2, rel=1e-5)
    assert float(terms.recon) == pytest.approx(recon, rel=1e-5)
    assert float(terms.kl) == pytest.approx(kl_normal, rel=1e-5)
    assert float(terms.extras["kl_laplace"]) == pytest.approx(kl_laplace, rel=1e-5, abs=1e-5)
    # The warm-up weighs the whole regulariser: at 0 only the reconstruction is left.
    with torch.no_grad():
        warm = get_objective("slow_vae")(model, batch, kl_weight=0.0)
    assert float(warm.loss) == pytest.approx(recon, rel=1e-5)


def test_the_transition_term_charges_the_l1_distance_of_the_codes() -> None:
    mu = torch.zeros(4, D)
    logvar = torch.full((4, D), -8.0)  # sharp posteriors: the term is about the means

    def cost(move: list[float]) -> float:
        still = slow_kl_laplace(mu, logvar, mu, logvar, 6.0)
        return float(slow_kl_laplace(mu, logvar, mu + torch.tensor(move), logvar, 6.0) - still)

    assert 0 < cost([0.5, 0.0, 0.0]) < cost([1.0, 0.0, 0.0])
    # Both frames pay rate * |move| each; one factor moving 1.5 costs what three moving 0.5
    # do, where a Gaussian transition prior would charge the one big move three times more.
    assert cost([1.5, 0.0, 0.0]) == pytest.approx(2 * 6.0 * 1.5, rel=0.05)
    assert cost([0.5, 0.5, 0.5]) == pytest.approx(cost([1.5, 0.0, 0.0]), rel=0.05)


@pytest.mark.parametrize("name", ["slow_vae", "pcl"])
def test_pair_objectives_refuse_single_images(name: str) -> None:
    model, batch = pairs()
    with pytest.raises(ValueError, match="trains on pairs"):
        get_objective(name)(model, Batch(batch.inputs, batch.targets))


# -- PCL ------------------------------------------------------------------------------------


def test_permutation_contrast_against_a_direct_computation() -> None:
    torch.manual_seed(1)
    head = PCLHead(D)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(0.3 * torch.randn_like(p))
    h1, h2 = torch.randn(6, D) * 3 + 1, torch.randn(6, D)
    with torch.no_grad():
        pcl, accuracy = permutation_contrast(head, h1, h2)
    h = np_(torch.cat([h1, h2]))
    z = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)
    z1, z2 = z[:6], z[6:]
    w1, w2, b = np_(head.w1), np_(head.w2), np_(head.bias)
    a, m = np.log1p(np.exp(float(head.a_free.detach()))), float(head.offset.detach())

    def r(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return -np.abs(w1 * u + w2 * v + b).sum(1) + a * (u**2).sum(1) + m

    true = r(z1, z2)
    permuted = r(z1, z2[[5, 0, 1, 2, 3, 4]])  # pair i gets pair i-1's second frame
    bce = np.concatenate([np.log1p(np.exp(-true)), np.log1p(np.exp(permuted))]).mean()
    assert float(pcl) == pytest.approx(bce, rel=1e-5)
    assert float(accuracy) == pytest.approx(((true > 0).sum() + (permuted < 0).sum()) / 12)


def test_the_regression_learns_which_pairs_are_true() -> None:
    """Anti-correlated frames: the initial r (w1 = 1, w2 = -1: slow codes) calls them
    permuted; trained, it tells them apart."""
    torch.manual_seed(0)
    head = PCLHead(D)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        h1 = torch.randn(256, D)
        return h1, -h1 + 0.1 * torch.distributions.Laplace(0.0, 1.0).sample((256, D))

    before = float(permutation_contrast(head, *batch())[1])
    optimiser = torch.optim.Adam(head.parameters(), lr=0.1)
    for _ in range(60):
        optimiser.zero_grad()
        permutation_contrast(head, *batch())[0].backward()
        optimiser.step()
    after = float(permutation_contrast(head, *batch())[1])
    assert before < 0.6 < 0.9 < after


def test_pcl_trains_its_encoder_by_contrast_and_its_decoder_on_the_detached_code() -> None:
    torch.manual_seed(0)
    model, objective = build(ModelConfig(objective="pcl", architecture="vanilla_cnn"), 1, 64, 5)
    assert isinstance(model.encoder, HeadedEncoder) and isinstance(model.encoder.head, PCLHead)
    assert not any("backbone.logvar" in n for n, _ in model.named_parameters())
    x1, x2 = torch.rand(4, 1, 64, 64), torch.rand(4, 1, 64, 64)
    batch = Batch(x1, x1, x2, x2)
    mu, logvar = model.encode(x1)
    assert torch.equal(mu, model.encoder.backbone(x1)[0])
    assert torch.all(logvar == CODE_LOGVAR)
    terms = objective(model, batch)
    scalars = terms.scalars()
    assert float(scalars["loss"]) == pytest.approx(float(scalars["recon"] + scalars["pcl"]))
    recon = torch.autograd.grad(terms.recon, list(model.parameters()), allow_unused=True)
    pcl = torch.autograd.grad(terms.extras["pcl"], list(model.parameters()), allow_unused=True)
    for (name, _), g_recon, g_pcl in zip(model.named_parameters(), recon, pcl, strict=True):
        if name.startswith("encoder"):
            assert g_recon is None, name  # the reconstruction never reaches the encoder
            assert g_pcl is not None and bool(g_pcl.abs().sum() > 0), name
        else:
            assert g_pcl is None and g_recon is not None, name
    with pytest.raises(ValueError, match="at least 2 pairs"):
        objective(model, Batch(x1[:1], x1[:1], x2[:1], x2[:1]))


# -- training as a stack --------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> tuple[Any, Any]:
    dataset = get_dataset("color_dsprites")
    return dataset, get_split("iid", dataset)


def fresh(config: ModelConfig, dataset: Any, seed: int) -> tuple[VAE, Any]:
    torch.manual_seed(seed)  # as a trial builds its model: the seed fixes the initial weights
    return build(config, dataset.channels, dataset.resolution, dataset.factors.num_factors)


def max_difference(a: VAE, b: VAE) -> float:
    return max(
        (x.double() - y.double()).abs().max().item()
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


# PCL standardises codes that start nearly equal for every image, which scales the float
# reordering of "vmap" up (as batch normalisation would) and Adam turns gradients at that noise
# level into whole steps: its vmap run is compared loosely, its "loop" run exactly.
@pytest.mark.parametrize(
    ("objective", "options", "batching", "tolerance", "rel"),
    [
        ("slow_vae", {}, "loop", 1e-6, 1e-4),
        ("slow_vae", {"k": 1, "rate": 2.0}, "vmap", 1e-5, 1e-4),
        ("slow_vae", {"data_distribution": "laplace", "rate_data": "random"}, "loop", 1e-6, 1e-4),
        ("pcl", {}, "loop", 1e-6, 1e-4),
        ("pcl", {}, "vmap", 1e-3, 1e-2),
        ("supervised", {"architecture": "coordconv"}, "vmap", 1e-4, 1e-4),
        ("supervised", {"architecture": "spatial_transformer"}, "loop", 1e-6, 1e-4),
    ],
)
def test_each_stacked_model_matches_its_lone_run(
    data: Any, objective: str, options: dict[str, Any], batching: str, tolerance: float, rel: float
) -> None:
    dataset, split = data
    model_config = ModelConfig(objective=objective, latent_dim=4, **options)
    config = TrainConfig(steps=4, batch_size=8, report_every=2, input_noise=True)
    lone = []
    for seed in SEEDS:
        model, obj = fresh(model_config, dataset, seed)
        lone.append((model, train(model, obj, dataset, split, config, seed=seed, device=CPU)))
    stacked = [fresh(model_config, dataset, seed)[0] for seed in SEEDS]
    result = train_stacked(
        stacked, obj, dataset, split, config, seeds=SEEDS, device=CPU, batching=batching
    )
    assert not result.diverged
    for (model, history), other, other_history in zip(lone, stacked, result.histories, strict=True):
        assert max_difference(model, other) < tolerance
        assert [h["step"] for h in other_history] == [2.0, 4.0]
        for row, other_row in zip(history, other_history, strict=True):
            assert row.keys() == other_row.keys()
            for key, value in row.items():
                assert other_row[key] == pytest.approx(value, rel=rel, abs=rel)
    assert max_difference(stacked[0], stacked[1]) > 1e-3  # the seeds really differ


def test_slow_vaes_differing_in_gamma_stack_as_their_lone_runs(data: Any) -> None:
    dataset, split = data
    configs = [ModelConfig(objective="slow_vae", latent_dim=4, gamma=g) for g in (1.0, 20.0)]
    config = TrainConfig(steps=4, batch_size=8, report_every=2)
    lone = []
    for model_config in configs:
        model, obj = fresh(model_config, dataset, 0)
        lone.append((model, train(model, obj, dataset, split, config, seed=0, device=CPU)))
    built = [fresh(c, dataset, 0) for c in configs]
    result = train_stacked(
        [m for m, _ in built],
        [o for _, o in built],
        dataset,
        split,
        config,
        seeds=[0, 0],
        device=CPU,
        batching="loop",
    )
    for (model, history), (other, _), other_history in zip(
        lone, built, result.histories, strict=True
    ):
        assert max_difference(model, other) < 1e-6
        assert len(history) == len(other_history)
        for row, other_row in zip(history, other_history, strict=True):
            assert row == pytest.approx(other_row)
    assert max_difference(built[0][0], built[1][0]) > 1e-4  # only gamma set them apart


def test_a_pretrained_model_is_not_stacked() -> None:
    with pytest.raises(ValueError, match="weights file is loaded into one model"):
        check_stackable(get_objective("supervised_pretrained"))
    message = refused_spec("execution.seeds_per_trial=2", "model.objective=supervised_pretrained")
    assert "supervised_pretrained" in message and "cannot be stacked" in message


# -- the networks ---------------------------------------------------------------------------


@pytest.mark.parametrize("resolution", [32, 64, 128])
def test_vanilla_cnn_is_schott_et_al_s_cnn(resolution: int) -> None:
    model = build_model("vanilla_cnn", 3, 10, resolution)
    convs = [m for m in model.encoder.modules() if isinstance(m, nn.Conv2d)]
    shapes = {
        32: [(32, 3), (64, 32), (64, 64)],
        64: [(32, 3), (32, 32), (64, 32), (64, 64)],
        128: [(32, 3), (32, 32), (32, 32), (64, 32), (64, 64)],
    }[resolution] + [(256, 64)]
    assert [tuple(c.weight.shape[:2]) for c in convs] == shapes
    assert all(c.kernel_size == (4, 4) for c in convs)
    h = torch.rand(2, 3, resolution, resolution)
    sizes = []
    for layer in model.encoder.features:
        h = layer(h)
        if isinstance(layer, nn.Conv2d):
            sizes.append(h.shape[-1])
    assert sizes[-2:] == [4, 1] and h.shape == (2, 256)
    # SlowVAE's init: Kaiming-normal fan-in weights, zero biases.
    assert all(float(c.bias.detach().abs().max()) == 0.0 for c in convs)
    out = model.decode(torch.zeros(2, 10))
    assert out.shape == (2, 3, resolution, resolution)
    with pytest.raises(ValueError, match="32, 64 or 128 px"):
        build_model("vanilla_cnn", 3, 10, 48)


def test_coordconv_reads_the_coordinates_everywhere() -> None:
    x = torch.zeros(2, 1, 5, 4)
    out = add_coordinates(x)
    assert out.shape == (2, 3, 5, 4)
    assert torch.equal(out[0, 1, 0], torch.linspace(-1, 1, 4))  # x along a row
    assert torch.equal(out[0, 2, :, 0], torch.linspace(-1, 1, 5))  # y down a column
    model = build_model("coordconv", 1, 4, 64)
    convs = [m for m in model.encoder.modules() if isinstance(m, nn.Conv2d)]
    assert [c.in_channels for c in convs] == [3, 34, 34, 66, 66]
    # A blank image still has a place: the code of an all-zero image depends on coordinates.
    torch.manual_seed(0)
    plain = build_model("vanilla_cnn", 1, 4, 64)
    blank = torch.zeros(1, 1, 64, 64)
    with torch.no_grad():
        for m in plain.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                m.bias.zero_()
        for m in model.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                m.bias.zero_()
        assert float(plain.encode(blank)[0].abs().max()) == 0.0
        assert float(model.encode(blank)[0].abs().max()) > 0.0


def test_the_spatial_transformer_starts_as_the_identity() -> None:
    torch.manual_seed(0)
    model = build_model("spatial_transformer", 3, 4, 64)
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(model.encoder.transform(x), x, atol=1e-5, rtol=0)
        model.encoder.theta.bias.copy_(torch.tensor([1.0, 0.0, 0.5, 0.0, 1.0, 0.0]))
        # a shift of the map moves the image
        assert float((model.encoder.transform(x) - x).abs().max()) > 0.1


def test_p4_layers_are_equivariant_to_quarter_turns() -> None:
    """Rotating the input rotates each output map and shifts its rotation channels by one."""
    torch.manual_seed(0)
    lift, group = LiftingConv(2, 3, 3, 1, 1), GroupConv(3, 2, 3, 1, 1)
    x = torch.rand(1, 2, 9, 9)

    def net(t: torch.Tensor) -> torch.Tensor:
        return group(torch.relu(lift(t))).view(1, 2, 4, 9, 9)

    out, turned = net(x), net(torch.rot90(x, 1, dims=(2, 3)))
    expected = torch.roll(torch.rot90(out, 1, dims=(3, 4)), shifts=1, dims=2)
    torch.testing.assert_close(turned, expected, atol=1e-5, rtol=1e-5)
    assert float((turned - torch.rot90(out, 1, dims=(3, 4))).abs().max()) > 1e-3


def test_the_imagenet_networks_have_torchvisions_parameter_counts() -> None:
    # torchvision's resnet50 / resnet101 / densenet121 less their 1000-way classifiers.
    assert num_parameters(ResNetBackbone((3, 4, 6, 3))) == 25_557_032 - 2_049_000
    with torch.device("meta"):
        assert num_parameters(ResNetBackbone((3, 4, 23, 3))) == 44_549_160 - 2_049_000
    assert num_parameters(DenseNetBackbone()) == 7_978_856 - 1_025_000
    model = build_model("resnet50", 1, 6, 64)  # grey images: the stem keeps ImageNet's shape
    assert model.encoder.backbone.conv1.weight.shape == (64, 3, 7, 7)
    mu, logvar = model.encode(torch.rand(2, 1, 64, 64))
    assert mu.shape == logvar.shape == (2, 6)


# ResNet-50 (~20 s here) runs with the heavy tests; its layout is checked above.
@pytest.mark.parametrize(
    "architecture",
    [
        "vanilla_cnn",
        "rotation_eq",
        "densenet121",
        pytest.param("resnet50", marks=pytest.mark.heavy),
    ],
)
def test_a_supervised_model_of_each_network_learns(data: Any, architecture: str) -> None:
    dataset, split = data
    model, objective = fresh(
        ModelConfig(objective="supervised", architecture=architecture), dataset, 0
    )
    fixed = BatchSampler(dataset, split, 16, None, False, CPU, np.random.default_rng(5))()

    def regression() -> float:
        model.train()  # batch statistics, as in training
        with torch.no_grad():
            return float(objective(model, fixed).extras["regression"])

    before = regression()
    config = TrainConfig(steps=8, batch_size=8, lr=1e-4, report_every=4)
    history = train(model, objective, dataset, split, config, seed=0, device=CPU)
    assert all(math.isfinite(v) for h in history for v in h.values())
    assert regression() < before


# -- ImageNet weights files -----------------------------------------------------------------


def torchvision_file(path: Any, backbone: nn.Module, classifier: str, features: int) -> dict:
    """What torch.save(torchvision_model.state_dict(), path) writes: the network's tensors,
    its 1000-way classifier included."""
    torch.manual_seed(7)
    state = {k: v.clone() for k, v in backbone.state_dict().items()}
    for k, v in state.items():
        if v.is_floating_point():
            state[k] = torch.randn_like(v)
    state[f"{classifier}.weight"] = torch.randn(1000, features)
    state[f"{classifier}.bias"] = torch.randn(1000)
    torch.save(state, path)
    return state


def pretrained_spec(*sets: str) -> Any:
    """The smoke study with these overrides and one model per seed (no model grid)."""
    base = ["grid={seed: [0, 1]}", "model.beta=null"]
    return load_spec(SMOKE, tiny("pretrained", *base, *sets), check_data=False)


def refused_spec(*sets: str) -> str:
    with pytest.raises(SpecError) as info:
        pretrained_spec(*sets)
    return str(info.value)


def test_a_weights_file_loads_and_training_starts_from_it(data: Any, tmp_path: Any) -> None:
    dataset, split = data
    path = tmp_path / "densenet121_imagenet.pt"
    saved = torchvision_file(path, DenseNetBackbone(), "classifier", 1024)
    spec = pretrained_spec(
        "model.objective=supervised_pretrained",
        "model.architecture=densenet121",
        f"model.weights={path}",
    )
    config = spec.trials()[0].model
    model, objective = fresh(config, dataset, 0)
    objective.setup(model, CPU)
    loaded = model.encoder.backbone.state_dict()
    assert all(torch.equal(loaded[k], saved[k]) for k in loaded)
    # The training loop loads it before the first step, then trains from there.
    model, objective = fresh(config, dataset, 1)
    train(model, objective, dataset, split, TrainConfig(steps=1, batch_size=4), seed=0, device=CPU)
    conv0 = model.encoder.backbone.features.conv0.weight
    assert 0 < float((conv0 - saved["features.conv0.weight"]).abs().max()) < 0.01


def test_old_style_densenet_names_and_a_dataparallel_prefix_load(tmp_path: Any) -> None:
    """torchvision's older DenseNet files name a layer's parts "norm.1", "conv.2" and predate
    batch norm's num_batches_tracked."""
    path = tmp_path / "old.pt"
    state = torchvision_file(path, DenseNetBackbone(), "classifier", 1024)
    renamed = {}
    for k, v in state.items():
        if k.endswith("num_batches_tracked"):
            continue
        k = re.sub(r"(denselayer\d+\.(?:norm|conv))([12])\.", r"\1.\2.", k)
        renamed[f"module.{k}"] = v
    assert "module.features.denseblock1.denselayer1.norm.1.weight" in renamed
    torch.save(renamed, path)
    model = build_model("densenet121", 3, 4, 64)
    load_imagenet_weights(model.encoder, path)
    assert torch.equal(
        model.encoder.backbone.features.denseblock1.denselayer1.norm1.weight,
        state["features.denseblock1.denselayer1.norm1.weight"],
    )


def test_a_missing_or_relative_weights_file_is_refused_before_anything_runs(
    tmp_path: Any,
) -> None:
    missing = tmp_path / "nowhere" / "resnet50.pt"
    message = refused_spec(
        "model.objective=supervised_pretrained",
        "model.architecture=resnet50",
        f"model.weights={missing}",
    )
    assert "model.weights" in message and str(missing) in message
    assert "nothing is downloaded" in message
    message = refused_spec("model.objective=supervised_pretrained", "model.weights=w/rn50.pt")
    assert "model.weights" in message and "absolute path" in message and "w/rn50.pt" in message
    # Only the objective that loads weights reads the option.
    message = refused_spec(f"model.weights={missing}", "model.objective=beta_vae")
    assert "model.weights" in message and "does not read weights" in message


def test_another_networks_weights_are_refused_naming_the_file(tmp_path: Any) -> None:
    path = tmp_path / "resnet101.pt"
    torchvision_file(path, ResNetBackbone((3, 4, 23, 3)), "fc", 2048)
    model = build_model("resnet50", 3, 4, 64)
    with pytest.raises(ValueError, match=r"resnet101\.pt is not a torchvision ResNetBackbone"):
        get_objective("supervised_pretrained", weights=str(path)).setup(model, CPU)
    with pytest.raises(ValueError, match="only the ImageNet architectures"):
        load_imagenet_weights(build_model("vanilla_cnn", 3, 4, 64).encoder, path)
    torch.save({"model": "not a state dict"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="expected a state dict"):
        load_imagenet_weights(model.encoder, tmp_path / "other.pt")


# -- whole trials ---------------------------------------------------------------------------


def test_trials_of_the_new_models_score_and_log_their_encoders(tmp_path: Any) -> None:
    """PCL (its encoder ends in its head) and a DenseNet started from a weights file, each as
    one trial on a Schott split: trained, scored (R^2 on held-out combinations),
    figures drawn, and PCL's encoder logged as the run's model (a DenseNet's export alone
    takes seconds; SlowVAE's model is a plain VAE, as beta_vae's, whose trials other tests
    run)."""
    # Weights whose batch-norm statistics fit them, as a trained network's do (random ones
    # would make the first steps' evaluation-mode activations overflow).
    torch.manual_seed(7)
    backbone = DenseNetBackbone()
    for m in backbone.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None  # a cumulative average over the batches below
    with torch.no_grad():
        for _ in range(3):
            backbone(torch.randn(16, 3, 64, 64))
    state = backbone.state_dict()
    state |= {"classifier.weight": torch.randn(1000, 1024), "classifier.bias": torch.zeros(1000)}
    weights = tmp_path / "densenet121.pt"
    torch.save(state, weights)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = MlflowClient(uri).create_experiment("schott_zoo")
    # (split, model): the DenseNet on the split with one scenario, since encoding each
    # scenario's probe sets is most of its trial's time.
    models = {
        "pcl": (
            "schott_extrapolation",
            {"objective": "pcl", "architecture": "vanilla_cnn", "latent_dim": 4},
        ),
        "pretrained": (
            "schott_random",
            {
                "objective": "supervised_pretrained",
                "architecture": "densenet121",
                "weights": str(weights),
            },
        ),
    }
    for name, (split, model) in models.items():
        config = TrialConfig.model_validate(
            {
                "dataset": {"name": "dsprites"},
                "split": split,
                "model": model,
                "train": {"steps": 2, "batch_size": 8, "report_every": 2},
                "evaluation": {
                    "metrics": [],
                    "probes": ["linear"],
                    "num_eval_images": 16,
                    "probe_train": 200,
                    "probe_test": 100,
                },
            }
        )
        ctx = TrialContext(
            uri,
            experiment,
            None,
            "schott_zoo",
            name,
            name,
            system_metrics=False,
            log_models=name == "pcl",
        )
        results = run_trial(config, ctx, LocalReporter())
        assert math.isfinite(results["transfer/test/linear/r2"]), name
        assert math.isfinite(results["eval/recon_heldout"]), name
    client = MlflowClient(uri)
    runs = client.search_runs([experiment])
    assert len(runs) == 2
    for run in runs:
        assert run.info.status == "FINISHED"
        assert ARTIFACT_ERROR_TAG not in run.data.tags and ERROR_TAG not in run.data.tags
        assert "reconstructions.png" in {a.path for a in client.list_artifacts(run.info.run_id)}
    pretrained = next(r for r in runs if r.data.params["model.objective"].endswith("pretrained"))
    assert pretrained.data.params["model.weights"] == str(weights)
    assert len(client.search_logged_models([experiment])) == 1, "PCL's encoder was not logged"
