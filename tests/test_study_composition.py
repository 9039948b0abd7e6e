"""The shipped composition study (Montero et al. 2021, Sec. 2.3), shrunk through `--set`, end
to end through the CLI: YAML -> Ray Tune (local cluster) -> MLflow -> the Table 1 NLLs and D
per trial -> `raystudy analyze`'s composition.csv beside the paper's numbers.

Heavy (~25 s alone, most of it the Ray driver and worker start): CI runs the same trial in
process (tests/test_composition.py, `run_trial`) and composition.csv from a results table."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.study.folder import StudyInfo
from raystudy.tags import TRIAL_RUNS

ROOT = Path(__file__).resolve().parents[1]
SPACE = ROOT / "search_spaces" / "montero2021_composition.yaml"
SMALL = [
    "name=composition_tiny",
    "train.steps=2",
    "train.batch_size=8",
    "train.report_every=1",
    "model.latent_dim=4",
    "grid.split=[montero_range]",
    "grid.seed=[0]",
    "evaluation.metrics=[dci_lasso]",
    "evaluation.num_train=100",
    "evaluation.num_test=50",
    "evaluation.num_eval_images=16",
    "resources={cpu: 1, gpu: 0}",
    "execution.log_models=false",
]


@pytest.mark.heavy
def test_composition_study_runs_small_and_writes_table1(ray_local, tmp_path: Path) -> None:
    sets = [a for s in SMALL for a in ("--set", s)]
    result = CliRunner().invoke(app, ["run", str(SPACE), "-o", str(tmp_path), *sets])
    assert result.exit_code == 0, result.output
    info = StudyInfo.read(tmp_path / "composition_tiny")
    client = mlflow.MlflowClient(info.tracking_uri)
    runs = client.search_runs([info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    run = runs[0]
    assert run.data.params["model.objective"] == "composition"
    metrics = run.data.metrics
    # The training loop trained on triples: its loss is recon + both images' KL.
    assert {"train/loss", "train/recon", "train/kl"} <= set(metrics)
    # Table 1: NLL on training triples and on triples whose target is held out, and D.
    assert metrics["eval/composition_nll"] > 0 and metrics["eval/composition_nll_heldout"] > 0
    assert 0.0 <= metrics["dis/dci_lasso_d"] <= 1.0
    assert "eval/elbo" not in metrics  # the decoder never decodes one image's code
    logged = {
        a.path for a in mlflow.MlflowClient(info.tracking_uri).list_artifacts(run.info.run_id)
    }
    assert "composition_trials.png" in logged

    result = CliRunner().invoke(
        app, ["analyze", "composition_tiny", "-o", str(tmp_path), "--bootstrap", "10"]
    )
    assert result.exit_code == 0, result.output
    assert "Composition task (Montero et al. 2021, Table 1)" in result.output
    table = pd.read_csv(tmp_path / "composition_tiny" / "analysis" / "composition.csv")
    assert list(table["condition"]) == ["montero_range"] and list(table["n"]) == [1]
    row = table.iloc[0]
    assert row["nll_heldout"] == metrics["eval/composition_nll_heldout"]
    assert row["D"] == metrics["dis/dci_lasso_d"]
    assert (row["paper_D"], row["paper_nll_heldout"]) == (0.71, 346.10)
