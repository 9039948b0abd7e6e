"""Montero et al. (2022)'s decoder test as their code runs it (``mmrl/lost-in-latent-space``,
``scripts/experiments/finetune.py`` via ``scripts/bin/run-retrain.sh``): the encoder arm
(decoder frozen, encoder re-initialised and trained with the VAE loss), the training set
rebalanced by shape (``rebalance_dataset``, whose weights 1 / count-of-the-image's-shape are
re-stated here), composition-trained base models, and the arms' own learning rate; what a
trial reports of each, what a spec refuses, and the analysis table's encoder-arm columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from planted_tables import schott_results
from tiny import SMOKE, tiny

from raystudy.analysis.figures.decoder_arms import decoder_test_figure
from raystudy.analysis.tables.decoder_arms import decoder_test_table
from raystudy.checks import load_spec
from raystudy.data import Split, get_dataset, get_split
from raystudy.keys import DECODER_TEST, ENCODER_TEST, eval_key
from raystudy.metrics.reported import reported_metrics
from raystudy.models import build
from raystudy.scoring import build_split
from raystudy.spec import SpecError, TrainConfig, TrialConfig
from raystudy.training.balanced import ShapeBalancedSampler
from raystudy.training.decoder_retrain import retrain_arm
from raystudy.training.loop import BatchSampler
from raystudy.trials.decoder_arms import decoder_test_scores

CPU = torch.device("cpu")
#: Spriteworld's simple set (a disc and a square) with the paper's middle squares held out.
DATASET, SPLIT = "simple", "montero2022_midpos"
TRAIN = TrainConfig(steps=1, batch_size=16, lr=1e-3, report_every=4)
ARMS = {eval_key(k, heldout=h) for k in (DECODER_TEST, ENCODER_TEST) for h in (False, True)}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def trial(objective: str = "beta_vae", **model: object) -> TrialConfig:
    return TrialConfig(
        dataset={"name": DATASET},
        split=SPLIT,
        model={"objective": objective, "latent_dim": 4, **model},
        train={"steps": 1, "batch_size": 16, "lr": 1e-3, "report_every": 2},
        evaluation={
            "metrics": [],
            "probes": [],
            "num_eval_images": 16,
            "decoder_test_steps": 4,
            "decoder_test_arms": ["decoder", "encoder"],
        },
    )


def built(config: TrialConfig, seed: int) -> torch.nn.Module:
    ds = get_dataset(DATASET)
    torch.manual_seed(seed)
    model, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)
    return model


def states(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def largest_change(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a if a[k].is_floating_point())


def test_the_encoder_arm_trains_only_the_encoder_with_the_vae_loss() -> None:
    config = trial()
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    model, fresh = built(config, 0), built(config, 1)
    before = states(model)

    tested, history = retrain_arm(
        "encoder", model, ds, split, TRAIN, 12, fresh.encoder, seed=0, device=CPU
    )

    assert same(states(model), before)  # the model tested is left as it was
    assert same(states(tested.decoder), states(model.decoder))  # frozen, bit for bit
    learnt = states(tested.encoder)
    assert not same(learnt, states(fresh.encoder)) and not same(learnt, states(model.encoder))
    assert [row["step"] for row in history] == [4.0, 8.0, 12.0]
    # The code's GaussianVAELoss at beta 1: reconstruction plus the posterior's KL.
    assert all(math.isclose(r["loss"], r["recon"] + r["kl"], rel_tol=1e-5) for r in history)
    assert history[-1]["loss"] < history[0]["loss"]
    gt = built(trial("gt_decoder", architecture="mlp", latent_dim=3), 0)
    with pytest.raises(ValueError, match="ground-truth factors \\(gt_decoder\\), it has none"):
        retrain_arm("encoder", gt, ds, split, TRAIN, 1, seed=0, device=CPU)


def test_the_arms_learning_rate_is_their_own() -> None:
    config = trial()
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    model, fresh = built(config, 0), built(config, 1)
    start = states(fresh.decoder)
    still, _ = retrain_arm(
        "decoder", model, ds, split, TRAIN, 3, fresh.decoder, seed=0, device=CPU, lr=1e-9
    )
    moved, _ = retrain_arm("decoder", model, ds, split, TRAIN, 3, fresh.decoder, seed=0, device=CPU)
    # Adam moves each weight by about lr a step: 3e-9 at most, against the trial's lr 1e-3.
    assert largest_change(states(still.decoder), start) < 1e-7
    assert largest_change(states(moved.decoder), start) > 1e-4


def authors_shape_shares(split: Split, grid: np.ndarray, shape: int, sizes: int) -> np.ndarray:
    """P(shape) under the code's ImbalancedSampler: each training image weighted
    1 / (training images of its shape), normalised."""
    inside = grid[split.mask("encoder", grid)]
    counts = np.bincount(inside[:, shape], minlength=sizes).astype(float)
    weights = 1.0 / counts[inside[:, shape]]
    return np.bincount(inside[:, shape], weights=weights, minlength=sizes) / weights.sum()


def test_rebalanced_draws_follow_the_codes_weights() -> None:
    ds = get_dataset("dsprites", orientation_grid="closed")
    split = get_split("montero2022_shape2tx", ds)  # squares at pos_x > 0.5 held out
    sizes = ds.factors.sizes
    grid = np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1).reshape(-1, 5)
    want = authors_shape_shares(split, grid[::3], 0, 3)
    assert np.allclose(want, 1 / 3)
    sampler = ShapeBalancedSampler(ds, split, 512, CPU, np.random.default_rng(0))
    assert sampler.shapes == [0, 1, 2]
    draws = np.concatenate([sampler.draw()[0] for _ in range(12)])
    assert split.mask("encoder", draws).all()  # never a held-out combination
    shares = np.bincount(draws[:, 0], minlength=3) / len(draws)
    assert np.abs(shares - want).max() < 0.03, shares
    # Within a shape, uniform: the squares spread evenly over their 16 training positions.
    squares = np.bincount(draws[draws[:, 0] == 0, 3], minlength=32)
    assert squares[16:].sum() == 0 and squares[:16].min() > 0.5 * squares[:16].mean()
    # Uniform draws (no rebalancing) show squares at their share of the set: 0.2, not 1/3.
    plain = BatchSampler(ds, split, 6144, None, False, CPU, np.random.default_rng(0)).draw()[0]
    assert abs(np.mean(plain[:, 0] == 0) - 0.2) < 0.03


def test_rebalancing_balances_the_shapes_the_set_holds_and_needs_a_shape() -> None:
    ds = get_dataset("dsprites", orientation_grid="closed")
    two = Split("no_hearts", {"shape": [0, 1]}, [], ds)
    sampler = ShapeBalancedSampler(ds, two, 256, CPU, np.random.default_rng(0))
    assert sampler.shapes == [0, 1]
    assert set(np.unique(sampler.draw()[0][:, 0])) == {0, 1}
    circles = get_dataset("circles")
    with pytest.raises(ValueError, match="needs a factor whose name holds 'shape'"):
        ShapeBalancedSampler(circles, get_split(SPLIT, circles), 8, CPU, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("objective", "extra", "arms"),
    [
        ("beta_vae", {}, ARMS),
        # The ground-truth decoder has no encoder: the decoder arm alone.
        (
            "gt_decoder",
            {"architecture": "mlp", "latent_dim": 3},
            {a for a in ARMS if DECODER_TEST in a},
        ),
    ],
)
def test_a_trial_reports_each_arm_it_runs(objective: str, extra: dict, arms: set[str]) -> None:
    config = trial(objective, **extra)
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    scores = decoder_test_scores(built(config, 0), ds, split, config, CPU)
    assert set(scores) == arms
    assert reported_metrics(config, split, ds.factors.names) & ARMS == arms  # the contract
    assert all(math.isfinite(v) and v > 0 for v in scores.values())


def test_a_composition_trained_model_goes_through_both_arms_as_its_vae() -> None:
    config = trial("composition", composition_op="fixint", reconstruct_inputs=True)
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    model = built(config, 0)
    layer = model.transform
    scores = decoder_test_scores(model, ds, split, config, CPU)
    assert set(scores) == ARMS and all(math.isfinite(v) for v in scores.values())
    assert model.transform is layer  # the model itself keeps its composition layer
    keys = reported_metrics(config, split, ds.factors.names)
    assert keys >= ARMS and eval_key("composition_nll") in keys
    # What is retrained is the VAE the layer sat on: it decodes one image's code.
    tested, _ = retrain_arm("decoder", model, ds, split, TRAIN, 1, seed=0, device=CPU)
    assert tested.transform is None


def test_a_spec_refuses_rebalancing_without_a_shape_factor() -> None:
    base = [
        "grid={seed: [0]}",
        "split=montero2022_midpos",
        "evaluation.decoder_test_steps=2",
        "evaluation.decoder_test_rebalance=true",
        "evaluation.decoder_test_arms=[decoder, encoder]",
    ]
    with pytest.raises(SpecError, match="decoder_test_rebalance: is true, but dataset 'circles'"):
        load_spec(SMOKE, tiny("reb", *base, "dataset={name: circles}"))
    spec = load_spec(SMOKE, tiny("reb", *base, "dataset={name: simple}"))
    ev = spec.trials()[0].evaluation
    assert ev.decoder_test_rebalance and ev.decoder_test_arms == ["decoder", "encoder"]


def test_the_table_and_figure_add_the_encoder_arm() -> None:
    frame = schott_results(seeds=2, probes=("gbt",))
    rng = np.random.default_rng(2)
    logged = frame.assign(
        **{
            "metrics.eval/recon_decoder_test": 90.0 + rng.normal(size=len(frame)),
            "metrics.eval/recon_decoder_test_heldout": 120.0 + rng.normal(size=len(frame)),
            "metrics.eval/recon_encoder_test": 95.0 + rng.normal(size=len(frame)),
            "metrics.eval/recon_encoder_test_heldout": 130.0 + rng.normal(size=len(frame)),
        }
    )
    table = decoder_test_table(logged).set_index(["model", "split", "dataset"])
    runs = logged.assign(model="beta_vae beta=" + logged["params.model.beta"])
    keys = ["model", "params.split", "params.dataset.name"]
    col = "metrics.eval/recon_encoder_test_heldout"
    want = runs.groupby(keys)[col].agg(["mean", "std"]).reindex(table.index)
    assert np.allclose(table["heldout_nll_encoder_retrained"], want["mean"])
    assert np.allclose(table["heldout_nll_encoder_retrained_std"], want["std"])
    fig = decoder_test_figure(table.reset_index())
    assert fig is not None
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["end to end", "decoder retrained", "encoder retrained"]
    # Runs that ran the encoder arm alone still make rows.
    alone = logged.drop(columns=[c for c in logged.columns if "decoder_test" in c])
    only = decoder_test_table(alone)
    assert len(only) == len(table) and only["heldout_nll_retrained"].isna().all()
    assert isinstance(only, pd.DataFrame)
