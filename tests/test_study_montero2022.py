"""The shipped Montero et al. (2022) study, shrunk through `--set`, end to end: YAML -> Ray Tune
(local cluster) -> MLflow -> the held-out reconstruction, the encoder test's per-factor R^2 and
the decoder test."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest

from raystudy.checks import load_spec
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo
from raystudy.tags import ARTIFACT_ERROR_TAG, TRIAL_RUNS

ROOT = Path(__file__).resolve().parents[1]
SMALL = [
    "name=montero2022_tiny",
    "train.steps=2",
    "train.batch_size=8",
    "train.report_every=1",
    "model.latent_dim=4",
    "grid.dataset=[{name: shapes3d}]",
    "grid.split=[montero2022_r2r]",
    "grid.also=[]",
    "grid.model=[{objective: lie_group_vae, group_matrix_dim: 4}]",
    "grid.seed=[0]",
    "evaluation.metrics=[mig]",
    "evaluation.probes=[linear]",
    "evaluation.num_train=100",
    "evaluation.num_test=50",
    "evaluation.probe_train=100",
    "evaluation.probe_test=50",
    "evaluation.num_eval_images=16",
    "evaluation.decoder_test_steps=2",
    "resources={cpu: 1, gpu: 0}",
    "execution.log_models=false",
]


# heavy for CI's time (27 s, the suite reached 614 s on 2026-11-27): the same trial path runs
# in CI in test_train_trial.py (Montero splits, held-out reconstruction, R^2) and
# test_decoder_test.py; `python -m pytest -m heavy` runs this whole study.
@pytest.mark.heavy
def test_montero2022_runs_small_and_scores_the_held_out_combinations(ray_local, tmp_path) -> None:
    spec = load_spec(ROOT / "search_spaces" / "montero2022.yaml", SMALL)
    assert spec.num_trials() == 1
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok, outcome.states
    info = StudyInfo.read(tmp_path / "montero2022_tiny")
    runs = mlflow.MlflowClient(info.tracking_uri).search_runs([info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    run = runs[0]
    assert run.data.params["split"] == "montero2022_r2r"
    assert run.data.params["model.objective"] == "lie_group_vae"
    metrics = run.data.metrics
    # Reconstruction of the held-out capsules with object hue >= 0.5, beside training's.
    assert metrics["eval/recon_heldout"] > 0 and metrics["eval/recon"] > 0
    # The decoder test, on the same images, once the decoder is retrained on frozen codes,
    # and once the encoder is retrained against the frozen decoder (the file's two arms).
    assert metrics["eval/recon_decoder_test_heldout"] > 0 and metrics["eval/recon_decoder_test"] > 0
    assert metrics["eval/recon_encoder_test_heldout"] > 0 and metrics["eval/recon_encoder_test"] > 0
    # The encoder test: readouts fit on training combinations, R^2 on the held-out ones.
    factors = ["floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation"]
    assert all(f"transfer/test/linear/r2/{f}" in metrics for f in factors)
    assert metrics["transfer/test/linear/r2"] <= 1.0
    # ... and where its codes land beside the trained ones.
    client = mlflow.MlflowClient(info.tracking_uri)
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"latent_projection.png", "heldout_reconstructions.png"} <= logged
    assert ARTIFACT_ERROR_TAG not in run.data.tags
