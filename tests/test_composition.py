"""The composition task of Montero et al. (ICLR 2021, Sec. 2.3): its triples respect the
split, CompositionNet's loss is the hand-computed one, its layer is part of the model, its
Table 1 NLLs are scored on the triples, and configurations it cannot run are refused before
any work. (Resuming exactly from a checkpoint: tests/test_train.py, over every objective.)"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient
from tiny import SMOKE, tiny
from torch import nn

from raystudy.analysis.tables.composition import composition_table
from raystudy.artifacts.composition import composed, draw_composition_trials
from raystudy.artifacts.subject import Subject
from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.data.splits.composition import (
    HELDOUT_ROLES,
    TRAIN_ROLES,
    composition_problem,
    sample_triples,
)
from raystudy.metrics.composition import composition_nll, triple_batch
from raystudy.metrics.reported import reported_metrics
from raystudy.models import Batch, build, get_objective
from raystudy.models.objectives.composition import LatentComposition, composition_layer
from raystudy.models.vae import VAE
from raystudy.scoring import eval_scores
from raystudy.spec import EvaluationConfig, ModelConfig, SpecError, TrialConfig
from raystudy.tags import ARTIFACT_ERROR_TAG
from raystudy.training.loop import BatchSampler
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

D, K, PIX = 3, 4, 16
CPU = torch.device("cpu")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def dsprites():
    return get_dataset("dsprites", orientation_grid="closed")


# -- the triples ----------------------------------------------------------------------------


def check_triples(t, k: int) -> None:
    """target = reference but in the action's factor, which is the transform's (and new)."""
    rows = np.arange(t.action.size)
    assert (t.target[rows, t.action] == t.transform[rows, t.action]).all()
    assert (t.target[rows, t.action] != t.reference[rows, t.action]).all()
    others = np.ones_like(t.target, dtype=bool)
    others[rows, t.action] = False
    assert (t.target[others] == t.reference[others]).all()
    # The action is uniform over the factors, even where the training set cuts one short
    # (extrapolation: half the pos_x moves of a training image leave it).
    share = np.bincount(t.action, minlength=k) / t.action.size
    assert np.abs(share - 1 / k).max() < 0.03, share


@pytest.mark.parametrize("kind", ["element", "range", "extrapolation"])
def test_triples_respect_the_split(dsprites, kind: str) -> None:
    split = get_split(f"montero_{kind}", dsprites)
    rng = np.random.default_rng(0)
    train = sample_triples(split, 3000, rng, TRAIN_ROLES)
    check_triples(train, 5)
    for images in (train.target, train.reference, train.transform):
        assert split.mask("encoder", images).all()
    test = sample_triples(split, 3000, rng, HELDOUT_ROLES)
    check_triples(test, 5)
    assert split.mask("heldout", test.target).all()
    assert not split.mask("encoder", test.target).any()
    # Inputs come from anywhere: some references are training images, some held out.
    for inputs in (test.reference, test.transform):
        assert 0.0 < split.mask("encoder", inputs).mean() < 1.0


def test_triples_are_reproducible_and_the_one_hot_is_the_action(dsprites) -> None:
    split = get_split("montero_range", dsprites)
    a = sample_triples(split, 50, np.random.default_rng(3))
    b = sample_triples(split, 50, np.random.default_rng(3))
    assert all(
        (x == y).all() for x, y in zip(a.__dict__.values(), b.__dict__.values(), strict=True)
    )
    hot = a.one_hot(5)
    assert hot.shape == (50, 5) and (hot.sum(1) == 1).all()
    assert (hot.argmax(1) == a.action).all()


def test_a_split_without_held_out_set_cannot_score_the_task(dsprites) -> None:
    assert composition_problem(get_split("montero_element", dsprites)) is None
    problem = composition_problem(get_split("iid", dsprites))
    assert problem is not None and "'iid' holds nothing out" in problem


def test_the_training_sampler_draws_triples_in_the_encoder_set(dsprites) -> None:
    split = get_split("montero_extrapolation", dsprites)
    sampler = BatchSampler(
        dsprites, split, 8, None, False, CPU, np.random.default_rng(0), triples=True
    )
    batch = sampler()
    assert batch.inputs.shape == batch.inputs2.shape == batch.targets.shape == (8, 1, 64, 64)
    assert batch.action.shape == (8, 5) and batch.targets2 is None
    # Rendered from the same rng, the triples are the ones the pure sampler draws.
    t = sample_triples(split, 8, np.random.default_rng(0))
    assert torch.equal(batch.targets, dsprites.render(torch.from_numpy(t.target)))
    assert torch.equal(batch.inputs2, dsprites.render(torch.from_numpy(t.transform)))


# -- the model and its loss -----------------------------------------------------------------


class TinyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(PIX, 2 * D)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x.flatten(1))
        return h[:, :D], 0.5 * h[:, D:]


class FixedNoiseVAE(VAE):
    """z = mu + eps * sd with eps set by the test."""

    def __init__(self) -> None:
        decoder = nn.Sequential(nn.Linear(D, PIX), nn.Unflatten(1, (1, 4, 4)))
        super().__init__(TinyEncoder(), decoder, D, transform=LatentComposition(D, K))
        self.eps = torch.zeros(0, D)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + self.eps[: mu.shape[0]] * (0.5 * logvar).exp()


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


@pytest.mark.parametrize(("beta", "kl_weight"), [(1.0, 1.0), (4.0, 0.5)])
def test_loss_is_the_target_nll_plus_beta_times_both_kls(beta: float, kl_weight: float) -> None:
    torch.manual_seed(0)
    n = 5
    model = FixedNoiseVAE()
    model.eps = torch.randn(2 * n, D)
    x_r, x_t, y = ((torch.rand(n, 1, 4, 4) > 0.5).float() for _ in range(3))
    action = torch.eye(K)[torch.tensor([0, 3, 1, 2, 3])]
    batch = Batch(x_r, y, inputs2=x_t, action=action)
    terms = get_objective("composition", beta=beta)(model, batch, kl_weight=kl_weight)

    # float64 numpy from the model's own weights
    w_enc, b_enc = np_(model.encoder.net.weight), np_(model.encoder.net.bias)
    layer = model.transform
    w_r, b_r = np_(layer.reference.weight), np_(layer.reference.bias)
    w_t, b_t = np_(layer.transform.weight), np_(layer.transform.bias)
    w_dec, b_dec = np_(model.decoder[0].weight), np_(model.decoder[0].bias)
    eps, a = np_(model.eps), np_(action)

    def encode(x: torch.Tensor, e: np.ndarray) -> tuple[np.ndarray, ...]:
        h = np_(x).reshape(n, -1) @ w_enc.T + b_enc
        mu, logvar = h[:, :D], 0.5 * h[:, D:]
        return mu, logvar, mu + e * np.exp(0.5 * logvar)

    mu_r, lv_r, z_r = encode(x_r, eps[:n])
    mu_t, lv_t, z_t = encode(x_t, eps[n:])
    h = np.c_[z_r, a] @ w_r.T + b_r + np.c_[z_t, a] @ w_t.T + b_t
    s = 1.0 / (1.0 + np.exp(-(h @ w_dec.T + b_dec)))
    target = np_(y).reshape(n, -1)
    recon = -(target * np.log(s) + (1 - target) * np.log(1 - s)).sum(1).mean()

    def kl(mu: np.ndarray, lv: np.ndarray) -> np.ndarray:
        return (0.5 * (mu**2 + np.exp(lv) - lv - 1)).sum(1)

    both = (kl(mu_r, lv_r) + kl(mu_t, lv_t)).mean()
    assert math.isclose(float(terms.recon.detach()), recon, rel_tol=1e-5)
    assert math.isclose(float(terms.kl.detach()), both, rel_tol=1e-5)
    assert math.isclose(float(terms.loss.detach()), recon + kl_weight * beta * both, rel_tol=1e-5)


def test_the_composition_layer_is_part_of_the_model() -> None:
    model, objective = build(ModelConfig(objective="composition"), 1, 64, num_factors=5)
    layer = composition_layer(model)
    assert (layer.reference.in_features, layer.reference.out_features) == (15, 10)
    names = set(model.state_dict())
    assert {"transform.reference.weight", "transform.transform.bias"} <= names
    assert any(p is layer.reference.weight for p in model.parameters())  # the optimiser's
    assert objective.triples and objective.stackable
    plain, _ = build(ModelConfig(objective="beta_vae"), 1, 64, num_factors=5)
    with pytest.raises(ValueError, match="LatentComposition"):
        composition_layer(plain)


def test_the_table1_nlls_are_scored_on_training_and_held_out_triples(dsprites) -> None:
    torch.manual_seed(0)
    model, _ = build(
        ModelConfig(objective="composition", architecture="mlp", latent_dim=4), 1, 64, 5
    )
    model.eval()
    split = get_split("montero_range", dsprites)
    ev = EvaluationConfig(num_eval_images=16)
    scores = eval_scores(model, dsprites, split, ev, CPU)
    assert set(scores) == {"eval/composition_nll", "eval/composition_nll_heldout"}
    assert scores == eval_scores(model, dsprites, split, ev, CPU)  # fixed triples and noise
    # The training score is the NLL of the training triples the seed fixes: recomputed here.
    t = sample_triples(split, 16, np.random.default_rng([ev.seed, 8]), TRAIN_ROLES)
    images = [dsprites.render(torch.from_numpy(i)) for i in (t.reference, t.target, t.transform)]
    batch = Batch(images[0], images[1], inputs2=images[2], action=torch.from_numpy(t.one_hot(5)))
    assert torch.equal(triple_batch(dsprites, t, CPU, chunk=5).inputs2, images[2])
    assert (
        scores["eval/composition_nll"]
        == composition_nll(model, batch, seed=ev.seed)["composition_nll"]
    )
    assert all(v > 0 for v in scores.values())


def test_the_trials_figure_shows_each_triple_and_the_output(dsprites, tmp_path) -> None:
    torch.manual_seed(0)
    model, _ = build(
        ModelConfig(objective="composition", architecture="mlp", latent_dim=4), 1, 64, 5
    )
    model.eval()
    split = get_split("montero_extrapolation", dsprites)
    t = sample_triples(split, 3, np.random.default_rng(1), HELDOUT_ROLES)
    images = composed(model, dsprites, t, CPU)
    assert images.shape == (4, 3, 1, 64, 64)
    assert np.array_equal(images[2], dsprites.render(t.target).numpy())  # row 3: the target
    assert images[3].min() > 0.0 and images[3].max() < 1.0  # row 4: Bernoulli means
    path = draw_composition_trials(tmp_path, Subject(model, dsprites, split, CPU, 0))
    assert path is not None and path.stat().st_size > 1000
    plain, _ = build(ModelConfig(objective="beta_vae", architecture="mlp", latent_dim=4), 1, 64, 5)
    assert draw_composition_trials(tmp_path, Subject(plain, dsprites, split, CPU, 0)) is None


def test_a_trial_trains_scores_and_logs_the_task_without_ray(dsprites, tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("comp")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites", "options": {"orientation_grid": "closed"}},
            "split": "montero_extrapolation",
            "model": {"objective": "composition", "architecture": "conv", "latent_dim": 4},
            "train": {"steps": 2, "batch_size": 8, "report_every": 1},
            "evaluation": {
                "metrics": ["dci_lasso"],
                "probes": [],
                "num_train": 100,
                "num_test": 50,
                "num_eval_images": 16,
            },
        }
    )
    ctx = TrialContext(
        uri, experiment, None, "comp", "t1", "composition", log_models=False, system_metrics=False
    )
    results = run_trial(config, ctx, LocalReporter())
    run = client.search_runs([experiment])[0]
    assert run.info.status == "FINISHED" and run.data.params["model.beta"] == "1.0"
    split = get_split("montero_extrapolation", dsprites)
    final = {k for k in results if not k.startswith("train/")}
    assert final == reported_metrics(config, split, dsprites.factors.names)  # as predicted
    assert results["eval/composition_nll_heldout"] > 0 and 0 <= results["dis/dci_lasso_d"] <= 1
    assert {"train/loss", "train/recon", "train/kl"} <= set(run.data.metrics)
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "composition_trials.png" in logged and ARTIFACT_ERROR_TAG not in run.data.tags


# -- refused configurations -----------------------------------------------------------------


COMPOSITION = [
    "model.objective=composition",
    "dataset={name: dsprites, options: {orientation_grid: closed}}",
    "split=montero_range",
    "grid={seed: [0]}",
]


def refusal(*extra: str) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(SMOKE, tiny("comp", *COMPOSITION, *extra))
    return str(info.value)


def test_composition_without_a_held_out_set_is_refused_at_the_split() -> None:
    message = refusal("split=iid")
    assert "split: objective 'composition'" in message and "holds nothing out" in message


def test_composition_refuses_noisy_inputs_to_reconstruct_and_pair_options() -> None:
    message = refusal("model.reconstruct_inputs=true", "train.input_noise=true")
    assert "model.reconstruct_inputs: is true while train.input_noise is on" in message
    # The decoder test is Montero et al. (2022)'s protocol on composition-trained models.
    spec = load_spec(SMOKE, tiny("comp", *COMPOSITION, "evaluation.decoder_test_steps=5"))
    assert spec.trials()[0].evaluation.decoder_test_steps == 5
    message = refusal("model.k=2")
    assert "model.k: objective 'composition' does not read k (it reads: beta, " in message
    message = refusal("grid={model: [{objective: composition, kl_mode: symmetric_kl}]}")
    assert "model.kl_mode" in message and "grid point 0" in message
    # A base k read by the weakly supervised models of the grid is theirs, not refused.
    mixed = [*COMPOSITION[1:3], "model.k=2"]
    grid = "grid={model: [{objective: ada_gvae}, {objective: composition}]}"
    assert load_spec(SMOKE, tiny("comp", *mixed, grid)).num_trials() == 2


def test_a_sound_composition_spec_loads_and_predicts_its_metrics(dsprites) -> None:
    spec = load_spec(SMOKE, tiny("comp", *COMPOSITION))
    [trial] = spec.trials()
    keys = reported_metrics(trial, get_split("montero_range", dsprites), dsprites.factors.names)
    assert {"eval/composition_nll", "eval/composition_nll_heldout"} <= keys
    assert "eval/elbo" not in keys  # its decoder never decodes one image's code


# -- the analysis table ---------------------------------------------------------------------


def test_table1_averages_seeds_per_condition_beside_the_papers_numbers() -> None:
    frame = pd.DataFrame(
        {
            "params.split": ["montero_range"] * 2 + ["montero_extrapolation", "iid"],
            "params.dataset.name": ["dsprites"] * 3 + ["shapes3d"],
            "metrics.dis/dci_lasso_d": [0.5, 0.7, 0.9, 0.1],
            "metrics.dis/dci_d": [0.0, 0.0, 0.0, 0.0],
            "metrics.eval/composition_nll": [40.0, 60.0, 30.0, np.nan],
            "metrics.eval/composition_nll_heldout": [300.0, 500.0, 9000.0, np.nan],
        }
    )
    table = composition_table(frame).set_index("condition")
    assert list(table.index) == ["montero_extrapolation", "montero_range"]  # iid: no task
    rng = table.loc["montero_range"]
    assert (rng["n"], rng["D_metric"]) == (2, "dis/dci_lasso_d")
    assert math.isclose(rng["D"], 0.6) and rng["nll_train"] == 50.0
    assert rng["nll_heldout"] == 400.0 and math.isclose(rng["nll_heldout_std"], 141.4213562)
    assert (rng["paper_D"], rng["paper_nll_train"], rng["paper_nll_heldout"]) == (
        0.71,
        50.10,
        346.10,
    )
    assert composition_table(frame.drop(columns="metrics.eval/composition_nll")).empty
