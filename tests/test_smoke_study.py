"""The shipped smoke study, whole, through the CLI: a paper-sized run (marker `paper`, ~5
minutes alone on 2 cores, 15 beside the fault tier's other half), out of CI like the laptop
study. The same spec runs through Tune at a tiny size in the fault tier
(tests/test_study_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from typer.testing import CliRunner

from raystudy.cli import app
from raystudy.study.folder import StudyInfo
from raystudy.tags import TRIAL_RUNS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.paper
def test_smoke_study_runs_eight_trials_and_analyzes(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["run", str(ROOT / "search_spaces/smoke.yaml"), "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    info = StudyInfo.read(tmp_path / "smoke")
    runs = mlflow.MlflowClient(info.tracking_uri).search_runs([info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 8 and {r.info.status for r in runs} == {"FINISHED"}
    keys = ["dis/dci_d", "dis/dci_c", "dis/dci_i", "dis/mig", "eval/elbo", "eval/recon"] + [
        f"transfer/{s}/{p}/mae"
        for s in ("ood1_a", "ood1_b", "ood1_c", "ood2_a")
        for p in ("gbt", "mlp")
    ]
    assert all(k in r.data.metrics for r in runs for k in keys)
    result = runner.invoke(app, ["analyze", "smoke", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "smoke" / "analysis" / "results.parquet").is_file()
    assert "transfer/ood2_a/gbt/mae" in result.output
