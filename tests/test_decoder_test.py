"""Montero et al. (2022)'s decoder test: only the decoder learns (the encoder and the model
tested stay bit-identical), its loss falls, and a trial's test reports finite NLLs under the
keys the metric-key contract predicts; the config field refuses what cannot be scored; the
analysis tables and draws it from a synthetic results table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from planted_tables import schott_results
from pydantic import ValidationError

from raystudy.analysis.figures.decoder_arms import decoder_test_figure
from raystudy.analysis.pipeline import DECODER_TEST_FILE, Settings, compute, write_analysis
from raystudy.analysis.tables.decoder_arms import decoder_test_table
from raystudy.data import get_dataset
from raystudy.keys import DECODER_TEST, eval_key
from raystudy.metrics.reported import reported_metrics
from raystudy.models import build
from raystudy.models.objectives.cascade_vae import category_head
from raystudy.scoring import build_split, eval_scores
from raystudy.spec import EvaluationConfig, TrainConfig, TrialConfig
from raystudy.training.decoder_retrain import retrain_arm
from raystudy.trials.decoder_arms import decoder_test_scores

CPU = torch.device("cpu")
#: Circles (one channel) with the paper's middle positions held out.
DATASET, SPLIT = "circles", "montero2022_midpos"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def trial(objective: str = "beta_vae", **model: object) -> TrialConfig:
    return TrialConfig(
        dataset={"name": DATASET},
        split=SPLIT,
        model={"objective": objective, "latent_dim": 4, **model},
        train={"steps": 1, "batch_size": 16, "lr": 1e-3, "report_every": 2},
        evaluation={"metrics": [], "probes": [], "num_eval_images": 16, "decoder_test_steps": 6},
    )


def states(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def largest_change(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_only_the_decoder_learns_and_its_loss_falls() -> None:
    config = trial()
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    torch.manual_seed(0)
    model, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)
    torch.manual_seed(1)
    fresh, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)
    before = states(model)
    train = TrainConfig(steps=1, batch_size=16, lr=1e-3, report_every=4)

    tested, history = retrain_arm(
        "decoder", model, ds, split, train, 12, seed=0, device=CPU, start=fresh.decoder
    )

    assert same(states(model), before)  # the model tested is left as it was
    assert same(states(tested.encoder), states(model.encoder))  # frozen, bit for bit
    learnt = states(tested.decoder)
    assert not same(learnt, states(fresh.decoder)) and not same(learnt, states(model.decoder))
    assert [row["step"] for row in history] == [4.0, 8.0, 12.0]
    assert history[-1]["recon"] < 0.9 * history[0]["recon"]

    # None fine-tunes the trained decoder: it starts from the model's weights, not fresh ones.
    tuned, _ = retrain_arm("decoder", model, ds, split, train, 1, seed=0, device=CPU)
    trained = states(model.decoder)
    assert largest_change(states(tuned.decoder), trained) < largest_change(
        states(fresh.decoder), trained
    )
    assert same(states(tuned.encoder), states(model.encoder))
    with pytest.raises(ValueError, match="steps must be >= 1"):
        retrain_arm("decoder", model, ds, split, train, 0, seed=0, device=CPU)


def test_a_cascade_decoder_retrained_from_fresh_weights_keeps_the_discrete_phase() -> None:
    config = trial("cascade_vae")
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    torch.manual_seed(0)
    model, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)
    category_head(model).discrete.fill_(1.0)  # as a model trained past discrete_from
    torch.manual_seed(1)
    fresh, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)
    train = TrainConfig(steps=1, batch_size=8, lr=1e-3, report_every=2)
    tested, history = retrain_arm(
        "decoder", model, ds, split, train, 2, seed=0, device=CPU, start=fresh.decoder
    )
    assert float(category_head(tested).discrete) == 1.0  # decodes with each image's category
    assert float(category_head(fresh).discrete) == 0.0
    assert math.isfinite(history[-1]["recon"])


@pytest.mark.parametrize(
    ("objective", "extra"), [("beta_vae", {}), ("gt_decoder", {"architecture": "mlp"})]
)
def test_a_trials_decoder_test_reports_finite_nlls_under_its_keys(
    objective: str, extra: dict[str, object]
) -> None:
    config = trial(objective, **extra)
    ds = get_dataset(DATASET)
    split = build_split(config, ds)
    torch.manual_seed(0)
    model, _ = build(config.model, ds.channels, ds.resolution, ds.factors.num_factors)

    scores = decoder_test_scores(model, ds, split, config, CPU)

    keys = {eval_key(DECODER_TEST), eval_key(DECODER_TEST, heldout=True)}
    assert set(scores) == keys
    assert keys <= reported_metrics(config, split, ds.factors.names)  # the contract's keys
    assert all(math.isfinite(v) and v > 0 for v in scores.values())
    # Trained for 6 steps on these images' kind, the new decoder beats the untrained one.
    untrained = eval_scores(model, ds, split, config.evaluation, CPU)
    assert scores[eval_key(DECODER_TEST)] < untrained[eval_key("recon")]
    off = config.model_copy(
        update={"evaluation": config.evaluation.model_copy(update={"decoder_test_steps": 0})}
    )
    assert decoder_test_scores(model, ds, split, off, CPU) == {}
    assert not keys & reported_metrics(off, split, ds.factors.names)


def test_the_config_field_validates() -> None:
    assert EvaluationConfig().decoder_test_steps == 0  # off unless asked for
    assert EvaluationConfig(decoder_test_steps=500).decoder_test_steps == 500
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        EvaluationConfig(decoder_test_steps=-1)
    with pytest.raises(ValidationError, match="needs num_eval_images > 0"):
        EvaluationConfig(decoder_test_steps=10, num_eval_images=0)


def with_decoder_test(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with random decoder-test NLLs, one run's held-out one missing."""
    rng = np.random.default_rng(5)
    after = {
        "metrics.eval/recon_decoder_test": 90.0 + rng.normal(size=len(frame)),
        "metrics.eval/recon_decoder_test_heldout": 120.0 + 5.0 * rng.normal(size=len(frame)),
    }
    logged = frame.assign(**after)
    logged.loc[0, "metrics.eval/recon_decoder_test_heldout"] = np.nan  # a run without it
    return logged


def test_the_analysis_tables_and_draws_the_test_where_logged() -> None:
    frame = schott_results(seeds=2, probes=("gbt",))
    logged = with_decoder_test(frame)

    table = decoder_test_table(logged).set_index(["model", "split", "dataset"])

    assert len(table) == 3 * 2 * 2  # betas x splits x datasets
    runs = logged.assign(model="beta_vae beta=" + logged["params.model.beta"])
    keys = ["model", "params.split", "params.dataset.name"]
    want = runs.groupby(keys)["metrics.eval/recon_decoder_test_heldout"].agg(["mean", "std"])
    assert np.allclose(table["heldout_nll_retrained"], want["mean"].reindex(table.index))
    assert np.allclose(
        table["heldout_nll_retrained_std"], want["std"].reindex(table.index), equal_nan=True
    )
    before = runs.groupby(keys)["metrics.eval/recon_heldout"].mean().reindex(table.index)
    assert np.allclose(table["heldout_nll"], before)
    assert set(table["n"]) == {2}
    assert decoder_test_table(frame).empty  # not logged: nothing to table or draw
    assert decoder_test_figure(decoder_test_table(frame)) is None

    fig = decoder_test_figure(table.reset_index())
    assert fig is not None
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4  # a panel per dataset and split
    assert all(len(ax.lines) >= 2 * 3 for ax in panels)  # held-out and train line per model


def test_analyze_writes_the_decoder_test_table_and_figure(tmp_path: Path) -> None:
    logged = with_decoder_test(schott_results(seeds=2, probes=("gbt",)))
    analysis = compute(logged, Settings(n_boot=10, min_trials=3))
    files = {f.name for f in write_analysis(analysis, tmp_path, study="m", planned_trials=24)}
    assert {DECODER_TEST_FILE, "decoder_test.png"} <= files
    assert len(pd.read_csv(tmp_path / DECODER_TEST_FILE)) == 12
