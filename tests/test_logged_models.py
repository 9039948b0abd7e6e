"""Every finished trial logs its encoder as an MLflow model that a fresh Python process loads
from the store alone and that gives the representation means the trial was scored on; a
stacked trial logs one per model; the registry and the study option that turns it off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient
from tiny import SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.data import get_dataset
from raystudy.scoring import build_split, encode_means
from raystudy.spec import SpecError, TrialConfig
from raystudy.tags import MODEL_ERROR_TAG, MODEL_TAG
from raystudy.tracking.models import registered_model_name
from raystudy.trials.common import TrialContext, build_seeded
from raystudy.trials.single import LocalReporter, run_trial
from raystudy.trials.stacked import run_seed_stack

CONFIG = {
    "dataset": {"name": "dsprites"},
    "split": "iid",
    "model": {"objective": "beta_vae", "latent_dim": 4},
    "train": {"steps": 2, "batch_size": 8, "report_every": 2},
    "evaluation": {
        "metrics": ["mig"],
        "probes": ["linear"],
        "num_train": 100,
        "num_test": 50,
        "probe_train": 40,
        "probe_test": 20,
        "num_eval_images": 8,
    },
}

#: Run in a fresh interpreter with nothing but the store: load the model by its run URI and
#: encode the saved images (before raystudy is imported), then score it again as the trial
#: was, from the trial config the run logged.
RELOAD = """
import json, sys, mlflow, mlflow.pytorch, numpy as np, torch
uri, run_id, folder = sys.argv[1:4]
mlflow.set_tracking_uri(uri)
encoder = mlflow.pytorch.load_model(f"runs:/{run_id}/model")
images = torch.from_numpy(np.load(f"{folder}/images.npy"))
np.save(f"{folder}/means.npy", encoder(images).detach().numpy())
alone = "raystudy" not in sys.modules
from raystudy import evaluate_encoder
config = json.loads(open(mlflow.artifacts.download_artifacts(
    run_id=run_id, artifact_path="trial_config.json", dst_path=folder)).read())
scores = evaluate_encoder(f"runs:/{run_id}/model", config["dataset"]["name"],
    config["split"], config["evaluation"], dataset_options=config["dataset"]["options"])
json.dump({"alone": alone, "scores": scores}, open(f"{folder}/out.json", "w"))
"""


def reload_and_rescore(
    uri: str, run_id: str, images: np.ndarray, folder: Path
) -> tuple[np.ndarray, dict[str, float]]:
    """What `runs:/<run_id>/model`, loaded in a new process, makes of `images`, and its
    scores there; checks that loading the model alone imported nothing of raystudy."""
    np.save(folder / "images.npy", images)
    done = subprocess.run(
        [sys.executable, "-c", RELOAD, uri, run_id, str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((folder / "out.json").read_text())
    assert out["alone"]  # the model needs torch and MLflow, not raystudy
    return np.load(folder / "means.npy"), out["scores"]


@pytest.mark.processes  # the reload in a fresh process
def test_a_trials_logged_encoder_reloads_in_a_fresh_process_with_its_means(
    tmp_path: Path,
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("logged")
    config = TrialConfig.model_validate(CONFIG)
    ctx = TrialContext(uri, experiment, None, "logged", "t0", "t0", register_models=True)
    run_trial(config, ctx, LocalReporter())
    run = client.search_runs([experiment])[0]
    assert run.info.status == "FINISHED" and MODEL_ERROR_TAG not in run.data.tags
    model_id = run.data.tags[MODEL_TAG].removeprefix("models:/")
    logged = client.get_logged_model(model_id)
    assert logged.source_run_id == run.info.run_id and logged.status.to_proto() == 2  # READY
    assert logged.experiment_id == experiment and logged.params["model.latent_dim"] == "4"

    # The trial's model, rebuilt and trained again exactly as the trial did (same seed, same
    # steps), gives the means the reloaded encoder must reproduce.
    dataset = get_dataset("dsprites")
    split = build_split(config, dataset)
    idx = split.sample("encoder", 5, np.random.default_rng(7))
    images = dataset.render(torch.from_numpy(idx)).numpy()
    reloaded, scores = reload_and_rescore(uri, run.info.run_id, images, tmp_path)
    assert reloaded.shape == (5, 4)
    from raystudy.training.loop import train

    model, objective = build_seeded(config, dataset, torch.device("cpu"))
    train(
        model, objective, dataset, split, config.train, seed=config.seed, device=torch.device("cpu")
    )
    want = encode_means(model, dataset, idx, torch.device("cpu"))
    np.testing.assert_allclose(reloaded, want, atol=1e-6)
    # Scored again from MLflow alone: every dis/* and transfer/* key of the trial, the same.
    trial = {k: v for k, v in run.data.metrics.items() if k.startswith(("dis/", "transfer/"))}
    assert set(scores) == set(trial) and "transfer/iid/linear/mae" in scores
    # The exported encoder runs other kernels than the trial's module: its means agree to
    # float32 rounding (above), which moves a least-squares probe's scores by ~1e-6 relative
    # on some CPUs (4.4e-6 on 2026-11-27's machine, <1e-9 on 2026-11-25's).
    assert scores == pytest.approx(trial, rel=1e-5)

    # Registered as a version of the study's model, tagged with the trial's key params.
    versions = client.search_model_versions(f"name = '{registered_model_name('logged')}'")
    assert len(versions) == 1
    tags = versions[0].tags
    assert versions[0].run_id == run.info.run_id and versions[0].source == logged.artifact_location
    assert tags["model.objective"] == "beta_vae" and tags["split"] == "iid"
    assert tags["seed"] == "0" and tags["trial"] == "t0"


def test_gt_decoder_logs_no_encoder_and_says_why(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("gt")
    config = TrialConfig.model_validate(
        {**CONFIG, "split": "iid", "model": {"objective": "gt_decoder"}}
    )
    run_trial(config, TrialContext(uri, experiment, None, "gt", "g", "g"), LocalReporter())
    run = client.search_runs([experiment])[0]
    assert run.info.status == "FINISHED"  # no model, and still a finished trial
    assert "ground-truth factors" in run.data.tags[MODEL_ERROR_TAG]
    assert MODEL_TAG not in run.data.tags
    assert client.search_logged_models([experiment]) == []


def test_a_stack_logs_one_model_per_seed_and_log_models_false_logs_none(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("stack")
    base = TrialConfig.model_validate(CONFIG)
    configs = [base.model_copy(update={"seed": s}) for s in (0, 1)]
    ctx = TrialContext(uri, experiment, None, "stack", "s0", "s0")
    run_seed_stack(configs, ctx, LocalReporter(), ["seed0", "seed1"])
    runs = {r.info.run_name: r for r in client.search_runs([experiment])}
    models = {m.source_run_id: m for m in client.search_logged_models([experiment])}
    assert set(models) == {r.info.run_id for r in runs.values()}
    assert {models[r.info.run_id].params["seed"] for r in runs.values()} == {"0", "1"}
    for run in runs.values():
        assert run.data.tags[MODEL_TAG] == f"models:/{models[run.info.run_id].model_id}"

    off = TrialContext(uri, experiment, None, "stack", "s1", "s1", log_models=False)
    run_trial(base.model_copy(update={"seed": 2}), off, LocalReporter())
    assert len(client.search_logged_models([experiment])) == 2


def test_register_models_needs_log_models() -> None:
    with pytest.raises(SpecError, match=r"register_models .* needs log_models: true"):
        load_spec(
            SMOKE,
            tiny("r", "execution.log_models=false", "execution.register_models=true"),
            check_data=False,
        )
    spec = load_spec(
        SMOKE,
        tiny("r", "execution.log_models=true", "execution.register_models=true"),
        check_data=False,
    )
    assert spec.execution.log_models and spec.execution.register_models
    assert json.loads(spec.model_dump_json())["execution"]["log_models"] is True
