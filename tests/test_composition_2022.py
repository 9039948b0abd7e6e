"""Montero et al. (NeurIPS 2022)'s CompositionNet as the `composition` objective's options: the
code's composition operations (``interp``, ``fixint``; ``mmrl/lost-in-latent-space``,
``src/models/compnet.py``) computed by hand in float64, and its loss with the inputs'
reconstructions (``reconstruct_inputs``), refused with input noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny import SMOKE, tiny
from torch import nn

from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.keys import train_key
from raystudy.models import Batch, build, get_objective
from raystudy.models.objectives.composition import (
    FixedInterpComposition,
    InterpComposition,
    composition_layer,
)
from raystudy.models.vae import VAE
from raystudy.spec import ModelConfig, SpecError, TrainConfig
from raystudy.training.loop import train
from raystudy.training.stacked import train_stacked

D, K, PIX, N = 6, 4, 16, 5
CPU = torch.device("cpu")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


def codes() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    action = torch.eye(K)[torch.tensor([0, 3, 1, 2, 3])]
    return torch.randn(N, D), torch.randn(N, D), action


def test_fixint_takes_the_actions_dimension_from_the_transform() -> None:
    z_r, z_t, action = codes()
    h = FixedInterpComposition(D, K)(z_r, z_t, action)
    want = np_(z_r).copy()
    for i, k in enumerate(np_(action).argmax(1)):
        want[i, k] = np_(z_t)[i, k]  # code dimension k is factor k's, by construction
    assert np.allclose(np_(h), want)
    assert not list(FixedInterpComposition(D, K).parameters())  # no weights
    with pytest.raises(ValueError, match="needs latent_dim >= 4, got 3"):
        FixedInterpComposition(3, K)


def test_interp_mixes_the_two_codes_with_a_learnt_gate() -> None:
    z_r, z_t, action = codes()
    op = InterpComposition(D, K)
    h = op(z_r, z_t, action)
    w_g, b_g = np_(op.gate.weight), np_(op.gate.bias)
    w = 1.0 / (1.0 + np.exp(-(np.c_[np_(z_r), np_(z_t), np_(action)] @ w_g.T + b_g)))
    assert np.allclose(np_(h), np_(z_r) * w + np_(z_t) * (1 - w), atol=1e-6)
    assert op.gate.in_features == 2 * D + K and op.gate.out_features == D


def test_the_objective_builds_the_chosen_operation() -> None:
    for name, kind in (("interp", InterpComposition), ("fixint", FixedInterpComposition)):
        model, objective = build(
            ModelConfig(objective="composition", composition_op=name), 1, 64, num_factors=5
        )
        assert isinstance(composition_layer(model), kind) and objective.triples


class TinyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(PIX, 2 * D)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x.flatten(1))
        return h[:, :D], 0.5 * h[:, D:]


class FixedNoiseVAE(VAE):
    """z = mu + eps * sd with eps set by the test; the fixint operation."""

    def __init__(self) -> None:
        decoder = nn.Sequential(nn.Linear(D, PIX), nn.Unflatten(1, (1, 4, 4)))
        super().__init__(TinyEncoder(), decoder, D, transform=FixedInterpComposition(D, K))
        self.eps = torch.zeros(0, D)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + self.eps[: mu.shape[0]] * (0.5 * logvar).exp()


def test_the_2022_loss_adds_both_inputs_reconstructions() -> None:
    torch.manual_seed(1)
    model = FixedNoiseVAE()
    model.eps = torch.randn(2 * N, D)
    x_r, x_t, y = ((torch.rand(N, 1, 4, 4) > 0.5).float() for _ in range(3))
    action = torch.eye(K)[torch.tensor([0, 3, 1, 2, 3])]
    batch = Batch(x_r, y, inputs2=x_t, action=action)
    objective = get_objective("composition", composition_op="fixint", reconstruct_inputs=True)
    terms = objective(model, batch, kl_weight=0.5)

    w_enc, b_enc = np_(model.encoder.net.weight), np_(model.encoder.net.bias)
    w_dec, b_dec = np_(model.decoder[0].weight), np_(model.decoder[0].bias)
    eps, a = np_(model.eps), np.c_[np_(action), np.zeros((N, D - K))]

    def encode(x: torch.Tensor, e: np.ndarray) -> tuple[np.ndarray, ...]:
        h = np_(x).reshape(N, -1) @ w_enc.T + b_enc
        mu, logvar = h[:, :D], 0.5 * h[:, D:]
        return mu, logvar, mu + e * np.exp(0.5 * logvar)

    def nll(z: np.ndarray, x: torch.Tensor) -> np.ndarray:
        s = 1.0 / (1.0 + np.exp(-(z @ w_dec.T + b_dec)))
        t = np_(x).reshape(N, -1)
        return -(t * np.log(s) + (1 - t) * np.log(1 - s)).sum(1)

    def kl(mu: np.ndarray, lv: np.ndarray) -> np.ndarray:
        return (0.5 * (mu**2 + np.exp(lv) - lv - 1)).sum(1)

    mu_r, lv_r, z_r = encode(x_r, eps[:N])
    mu_t, lv_t, z_t = encode(x_t, eps[N:])
    target = nll(z_r * (1 - a) + z_t * a, y).mean()
    inputs = (nll(z_r, x_r) + nll(z_t, x_t)).mean()
    both = (kl(mu_r, lv_r) + kl(mu_t, lv_t)).mean()
    assert math.isclose(float(terms.recon.detach()), target, rel_tol=1e-5)  # the task's NLL alone
    assert math.isclose(float(terms.extras["inputs_recon"].detach()), inputs, rel_tol=1e-5)
    assert math.isclose(float(terms.loss.detach()), target + inputs + 0.5 * both, rel_tol=1e-5)
    # Without the option the inputs' terms are neither in the loss nor reported.
    plain = get_objective("composition", composition_op="fixint")(model, batch, kl_weight=0.5)
    assert math.isclose(float(plain.loss.detach()), target + 0.5 * both, rel_tol=1e-5)
    assert "inputs_recon" not in plain.extras


COMPOSITION = [
    "model.objective=composition",
    "dataset={name: dsprites, options: {orientation_grid: closed}}",
    "split=montero2022_r2r",
    "grid={seed: [0]}",
]


def test_reconstructing_noisy_inputs_is_refused_and_the_2022_options_load() -> None:
    with pytest.raises(SpecError, match=r"model\.reconstruct_inputs: is true while train\.input"):
        load_spec(
            SMOKE,
            tiny("c22", *COMPOSITION, "model.reconstruct_inputs=true", "train.input_noise=true"),
        )
    spec = load_spec(
        SMOKE,
        tiny("c22", *COMPOSITION, "model.reconstruct_inputs=true", "model.composition_op=interp"),
    )
    options = spec.trials()[0].model.options
    assert options["reconstruct_inputs"] is True and options["composition_op"] == "interp"
    with pytest.raises(SpecError, match="composition_op"):
        load_spec(SMOKE, tiny("c22", *COMPOSITION, "model.composition_op=mlp"))


@pytest.mark.parametrize("op", ["interp", "fixint"])
def test_the_2022_network_stacks_as_its_lone_runs(op: str) -> None:
    # Seeds trained as one batched model (torch.func.vmap) give each lone run's weights: the
    # operations and the inputs' reconstructions are plain tensor ops of the model's own.
    dataset = get_dataset("simple")
    split = get_split("montero2022_midpos", dataset)
    config = ModelConfig(
        objective="composition", latent_dim=4, composition_op=op, reconstruct_inputs=True
    )
    train_config = TrainConfig(steps=3, batch_size=8, report_every=3)
    seeds = [3, 11]

    def fresh(seed: int) -> tuple[VAE, object]:
        torch.manual_seed(seed)
        return build(config, dataset.channels, dataset.resolution, dataset.factors.num_factors)

    lone = []
    for seed in seeds:
        model, objective = fresh(seed)
        history = train(model, objective, dataset, split, train_config, seed=seed, device=CPU)
        lone.append((model, history))
    stacked = [fresh(seed)[0] for seed in seeds]
    result = train_stacked(
        stacked, objective, dataset, split, train_config, seeds=seeds, device=CPU, batching="vmap"
    )
    assert not result.diverged
    for (model, history), other, other_history in zip(lone, stacked, result.histories, strict=True):
        gap = max(
            (x - y).abs().max().item()
            for x, y in zip(model.state_dict().values(), other.state_dict().values(), strict=True)
        )
        assert gap < 1e-5
        key = train_key("inputs_recon")  # the 2022 loss's extra term, reported
        assert other_history[-1][key] == pytest.approx(history[-1][key], rel=1e-4)
