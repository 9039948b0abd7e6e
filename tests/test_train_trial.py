"""A trial (no Ray) records its model's size and cost among its MLflow params, and evaluates
gt_decoder on the ground-truth factors themselves."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from reporters import StopAfter

from raystudy.analysis.core.results import unscored
from raystudy.data import get_dataset
from raystudy.metrics.reported import reported_metrics
from raystudy.scoring import build_split
from raystudy.spec import TrialConfig
from raystudy.tags import ARTIFACT_ERROR_TAG, ERROR_TAG, INVALID_SCORES_TAG
from raystudy.tracking.reader import trial_runs_table
from raystudy.trials.common import StudyContext, TrialContext
from raystudy.trials.single import LocalReporter, run_trial
from raystudy.trials.stacked import run_seed_stack


def assert_names_declared(config: TrialConfig, results: dict[str, float]) -> None:
    """What the spec lets a search name (`reported_metrics`) is what a trial reports."""
    dataset = get_dataset(config.dataset.name)
    split = build_split(config, dataset)
    final = {k for k in results if not k.startswith("train/")}
    assert final == reported_metrics(config, split, dataset.factors.names)


class ListReporter(LocalReporter):
    @property
    def reports(self) -> list[dict[str, float]]:
        return self.results


def test_trial_logs_model_cost_and_scores_gt_decoder_on_the_factors(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("zoo")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "iid",
            "model": {"objective": "gt_decoder", "latent_dim": 10},
            "train": {"steps": 2, "batch_size": 8, "report_every": 1, "checkpoint_every": 2},
            "evaluation": {
                "metrics": ["dci", "beta_vae", "factor_vae"],
                "probes": ["gbt"],
                "num_train": 400,
                "num_test": 200,
                "probe_train": 40,
                "probe_test": 20,
                "num_eval_images": 16,
            },
        }
    )
    results = run_trial(
        config, TrialContext(uri, experiment, None, "zoo", "t1", "gt"), ListReporter()
    )
    run = client.search_runs([experiment])[0]
    params = run.data.params
    assert run.info.status == "FINISHED"
    assert int(params["model.num_params"]) > 100_000
    assert int(params["model.flops_per_step"]) > 10**8
    assert results["dis/dci_d"] > 0.95  # the code is the factors: 5 dimensions, one each
    # The intervention metrics score the same code, not the (barely trained) encoder.
    assert results["dis/beta_vae"] > 0.95 and results["dis/factor_vae"] > 0.95
    assert results["dis/factor_vae_active_dims"] == 5
    # Only a decoder is trained; eval/* decode the factors, and tc (a posterior's) is absent.
    assert "train/regression" not in run.data.metrics and "eval/tc" not in run.data.metrics
    assert run.data.metrics["eval/elbo"] == -run.data.metrics["eval/recon"]
    # iid holds nothing out: no held-out reconstructions
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "reconstructions.png" in logged
    assert not any(p.startswith("heldout_reconstructions") for p in logged)


def test_montero_trial_scores_heldout_reconstruction_and_schott_r2(tmp_path: Path) -> None:
    """Splits with a held-out set report reconstruction there too; Schott's R^2 convention."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = MlflowClient(uri).create_experiment("splits")
    base = {
        "dataset": {"name": "dsprites"},
        "model": {"objective": "beta_vae", "latent_dim": 4},
        "train": {"steps": 2, "batch_size": 8, "report_every": 2},
        "evaluation": {
            "metrics": [],
            "probes": ["linear"],
            "num_eval_images": 16,
            "probe_train": 200,
            "probe_test": 100,
        },
    }
    results = {}
    for split in ("montero_extrapolation", "schott_extrapolation"):
        config = TrialConfig.model_validate({**base, "split": split})
        ctx = TrialContext(uri, experiment, None, "splits", trial_id=split, trial_name=split)
        results[split] = run_trial(config, ctx, LocalReporter())
    for split in results:
        assert_names_declared(TrialConfig.model_validate({**base, "split": split}), results[split])
    montero = results["montero_extrapolation"]
    assert montero["eval/recon_heldout"] > 0 and montero["eval/recon"] > 0
    assert montero["eval/elbo_heldout"] == -(
        montero["eval/recon_heldout"] + montero["eval/kl_heldout"]
    )
    # pos_x is the OOD factor of Montero's extrapolation: reported, left out of the mean
    assert "transfer/test/linear/mae/pos_x" in montero
    schott = results["schott_extrapolation"]
    assert "eval/recon_heldout" in schott
    assert "transfer/test/linear/r2" in schott
    # each logs its held-out set's reconstructions, one figure (Montero's scenario is that set)
    client = MlflowClient(uri)
    for found in client.search_runs([experiment]):
        logged = {a.path for a in client.list_artifacts(found.info.run_id)}
        assert ARTIFACT_ERROR_TAG not in found.data.tags
        assert {p for p in logged if p.startswith("heldout")} == {"heldout_reconstructions.png"}


def test_trial_scores_intervention_metrics_inside_the_encoder_set(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = MlflowClient(uri).create_experiment("interventions")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "color_dsprites"},
            "split": "dittadi_hues",
            "model": {"objective": "beta_vae", "latent_dim": 4},
            "train": {"steps": 2, "batch_size": 8, "report_every": 2},
            "evaluation": {
                "metrics": ["sap", "gbt10000", "beta_vae", "factor_vae"],
                "probes": [],
                "num_train": 300,
                "num_test": 100,
                "num_eval_images": 8,
            },
        }
    )
    ctx = TrialContext(uri, experiment, None, "interventions", trial_id="t", trial_name="t")
    results = run_trial(config, ctx, LocalReporter())
    assert_names_declared(config, results)
    for key in ("dis/sap", "dis/beta_vae", "dis/factor_vae"):
        assert 0.0 <= results[key] <= 1.0
    # downstream accuracy is a down/* score, as docs/architecture/models-and-metrics.md names it
    assert 0.0 <= results["down/gbt100_acc"] <= 1.0 and "dis/gbt100_acc" not in results
    # draws come from the encoder set: the 4 held-out hues of 12 are rejected and redrawn
    assert abs(results["dis/beta_vae_resampled"] - 4 / 12) < 0.03


def test_a_trial_whose_run_already_finished_reports_it_without_rerunning(tmp_path: Path) -> None:
    """Cut off between closing its MLflow run and reporting to Tune, a resumed trial hands
    Tune the logged results instead of evaluating and logging them again."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("again")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "model": {"objective": "beta_vae", "latent_dim": 3},
            "train": {"steps": 2, "batch_size": 4, "report_every": 2},
            "evaluation": {
                "metrics": ["mig"],
                "probes": [],
                "num_train": 100,
                "num_eval_images": 8,
            },
        }
    )
    ctx = TrialContext(uri, experiment, None, "again", trial_id="same", trial_name="same")
    first = run_trial(config, ctx, LocalReporter())
    run = client.search_runs([experiment])[0]
    again = LocalReporter()
    second = run_trial(config, ctx, again)
    assert {k: second[k] for k in first} == first  # (plus the train/* curves it logged)
    assert (
        again.results[-1]["evaluated"] == 1.0 and again.results[-1]["dis/mig"] == first["dis/mig"]
    )
    assert len(client.search_runs([experiment])) == 1
    after = client.get_run(run.info.run_id)
    assert after.info.status == "FINISHED" and after.info.end_time == run.info.end_time
    assert len(client.get_metric_history(run.info.run_id, "dis/mig")) == 1


def test_an_in_process_resume_continues_from_the_checkpoint_as_it_was(tmp_path: Path) -> None:
    # The checkpoint at step 2 must not follow the model (and FactorVAE's discriminator) on
    # to step 3 before the trial dies: resumed, the trial ends as if never interrupted.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = MlflowClient(uri).create_experiment("resume")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "model": {"objective": "factor_vae", "latent_dim": 3},
            "train": {"steps": 4, "batch_size": 4, "report_every": 1, "checkpoint_every": 2},
            "evaluation": {"metrics": ["mig"], "probes": [], "num_train": 100},
        }
    )
    whole = LocalReporter()
    run_trial(config, TrialContext(uri, experiment, None, "resume", "a", "a"), whole)
    cut = StopAfter(step=3)
    ctx = TrialContext(uri, experiment, None, "resume", "b", "b")
    with pytest.raises(KeyboardInterrupt):
        run_trial(config, ctx, cut)
    assert cut.state is not None and cut.state["step"] == 2
    assert [h["step"] for h in cut.state["history"]] == [1.0, 2.0]
    run_trial(config, ctx, cut)

    def last_loss(reporter: LocalReporter) -> float:
        return [r for r in reporter.results if "train/loss" in r][-1]["train/loss"]

    assert last_loss(cut) == last_loss(whole)
    assert cut.results[-1]["dis/mig"] == whole.results[-1]["dis/mig"]


def test_log_artifacts_false_logs_the_scores_and_no_figures(tmp_path: Path) -> None:
    """`execution.log_artifacts: false` (huge sweeps) skips the figures, not the results."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("bare")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "iid",
            "model": {"latent_dim": 4},
            "train": {"steps": 2, "batch_size": 8, "report_every": 1},
            "evaluation": {
                "metrics": ["mig"],
                "probes": [],
                "num_train": 100,
                "num_test": 50,
                "num_eval_images": 16,
            },
        }
    )
    ctx = TrialContext(uri, experiment, None, "bare", "t1", "t1", log_models=False)
    results = run_trial(config, replace(ctx, log_artifacts=False), ListReporter())
    run = client.search_runs([experiment])[0]
    assert run.info.status == "FINISHED" and "dis/mig" in results
    assert run.data.metrics["dis/mig"] == results["dis/mig"]
    assert client.list_artifacts(run.info.run_id) == []
    drawn_in = client.create_experiment("drawn")
    run_trial(config, replace(ctx, experiment_id=drawn_in, trial_id="t2"), ListReporter())
    drawn = client.search_runs([drawn_in])[0]
    assert "reconstructions.png" in {a.path for a in client.list_artifacts(drawn.info.run_id)}


def test_a_study_context_gives_each_trial_all_it_shares() -> None:
    """What the study driver builds once reaches every trial's context, field for field."""
    study = StudyContext(
        "sqlite:///m.db",
        "7",
        "parent",
        "s",
        "1.0+abc",
        cpus=2.0,
        gpu=0.5,
        log_models=False,
        register_models=True,
        system_metrics=False,
        log_artifacts=False,
    )
    ctx = study.trial("t1", "0001_beta=4", node="n" * 56, gpu_ids="0")
    shared = {f.name for f in fields(StudyContext)} & {f.name for f in fields(TrialContext)}
    assert shared == {f.name for f in fields(StudyContext)} - {"gpu"}, "gpu is the trainable's"
    for name in shared:
        assert getattr(ctx, name) == getattr(study, name), name
    assert (ctx.trial_id, ctx.trial_name, ctx.node, ctx.gpu_ids) == (
        "t1",
        "0001_beta=4",
        "n" * 56,
        "0",
    )
    assert study.resources == {"cpu": 2.0, "gpu": 0.5}


def test_a_model_that_cannot_be_built_fails_its_run_lone_or_stacked(tmp_path: Path) -> None:
    """Lone and stacked trials build their models the same way, before their runs open: a
    build failure is on every run it concerns, as FAILED with the error, not lost."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("unbuildable")
    # resnet is for 64 or 128 px; the checks refuse this spec, so only a direct call meets it
    raw = {
        "dataset": {"name": "color_dsprites", "options": {"resolution": 32}},
        "model": {"objective": "beta_vae", "architecture": "resnet", "latent_dim": 4},
        "train": {"steps": 2, "batch_size": 8, "report_every": 1},
    }
    configs = [TrialConfig.model_validate({**raw, "seed": s}) for s in (0, 1)]
    lone = TrialContext(uri, experiment, None, "unbuildable", "lone", "lone")
    with pytest.raises(ValueError, match="resnet architecture is for"):
        run_trial(configs[0], lone, LocalReporter())
    stack = replace(lone, trial_id="stack", trial_name="stack")
    with pytest.raises(ValueError, match="resnet architecture is for"):
        run_seed_stack(configs, stack, LocalReporter(), ["seed0", "seed1"])
    runs = client.search_runs([experiment])
    assert len(runs) == 3
    for run in runs:
        assert run.info.status == "FAILED"
        assert "resnet architecture is for [64, 128] px" in run.data.tags[ERROR_TAG]
        assert run.data.params["model.architecture"] == "resnet"


class BreaksCodeAtTheEnd(ListReporter):
    """Reports like Tune; at the last checkpoint, dimension 2 of the live encoder's mean
    becomes NaN (the state holds the model's own tensors): the trained model that is then
    scored gives NaN in one code dimension, as a broken encoder would."""

    def __init__(self, last_step: int) -> None:
        super().__init__()
        self.last_step = last_step

    def report(self, metrics: dict[str, float], state: dict | None = None) -> None:
        if state is not None and state["step"] == self.last_step:
            state["model"]["encoder.mean.bias"][2] = float("nan")
        super().report(metrics, state)


def test_nan_codes_of_the_trained_model_are_left_unscored_and_tagged(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("nan")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "montero_range",
            "model": {"objective": "beta_vae", "architecture": "mlp", "latent_dim": 6},
            "train": {"steps": 4, "batch_size": 8, "report_every": 2, "checkpoint_every": 2},
            "evaluation": {
                "metrics": ["dci", "mig", "beta_vae"],
                "probes": ["linear"],
                "num_train": 200,
                "num_test": 100,
                "probe_train": 60,
                "probe_test": 30,
                "num_eval_images": 8,
            },
        }
    )
    results = run_trial(
        config, TrialContext(uri, experiment, None, "nan", "t1", "nan"), BreaksCodeAtTheEnd(4)
    )
    run = client.search_runs([experiment])[0]
    # the model trained and finished; what read its codes is absent, never a zeroed score
    assert run.info.status == "FINISHED" and ERROR_TAG not in run.data.tags
    for prefix in ("dis/", "down/", "transfer/"):
        assert not [k for k in run.data.metrics if k.startswith(prefix)], prefix
        assert not [k for k in results if k.startswith(prefix)], prefix
    note = run.data.tags[INVALID_SCORES_TAG]
    for part in ("dis/dci*", "dis/mig*", "dis/beta_vae", "transfer/"):
        assert part in note, note
    assert "are NaN or inf (dimension(s) [2])" in note
    assert "train/loss" in run.data.metrics  # training's record is kept
    # analyze reads the runs as a table and names the trial and why its scores are missing
    table = unscored(trial_runs_table(uri, experiment))
    assert table["trial"].tolist() == [run.info.run_name] and table["invalid"][0] == note
    # without the guard the metrics would have scored the dimension as dead: a valid-looking
    # number where the model's encoder is broken
    from raystudy.metrics import MetricWarning, evaluate

    codes = np.random.default_rng(0).normal(size=(300, 6))
    codes[:, 2] = np.nan
    factors = np.random.default_rng(1).integers(0, 3, size=(300, 5))
    with pytest.warns(MetricWarning, match="treated as dead"):
        assert np.isfinite(evaluate("mig", codes, factors, num_train=200)["mig"])
