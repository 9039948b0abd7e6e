"""A real study end to end: YAML -> Ray Tune (local cluster) -> MLflow sqlite -> analysis."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
from tiny import tiny
from typer.testing import CliRunner

from raystudy.analysis.core.results import load_results
from raystudy.analysis.tables.correlations import spearman_table
from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyError, StudyInfo
from raystudy.tags import PARENT_TAG, STUDY_TAG, TRIAL_ID_TAG, TRIAL_RUNS

ROOT = Path(__file__).resolve().parents[1]
TINY = tiny(
    "tiny",
    "evaluation.probes=[gbt, mlp]",
    # two trials, one per objective: each trial type is exercised once
    "grid={model: [{objective: beta_vae, beta: 4}, {objective: ada_gvae, beta: 1}], seed: [0]}",
)
EXPECTED = (
    ["dis/dci_d", "dis/dci_c", "dis/dci_i", "dis/mig", "eval/elbo", "eval/recon", "eval/kl"]
    + [
        f"transfer/{s}/{p}/mae"
        for s in ("ood1_a", "ood1_b", "ood1_c", "ood2_a", "ood2_b")
        for p in ("gbt", "mlp")
    ]
    + ["transfer/ood2_a/gbt/mae/shape", "transfer/ood2_a/mlp/r2"]
)


@pytest.fixture(scope="module")
def finished_study(ray_local, tmp_path_factory: pytest.TempPathFactory):
    output = tmp_path_factory.mktemp("studies")
    spec = load_spec(ROOT / "search_spaces" / "smoke.yaml", TINY)
    outcome = run_study(spec, output=output, verbose=0)
    return spec, outcome, output


@pytest.mark.heavy  # the study through Tune: the fault tier
def test_every_trial_finishes_with_one_mlflow_run_holding_every_metric(finished_study) -> None:
    _, outcome, output = finished_study
    assert outcome.ok, outcome.states
    info = StudyInfo.read(output / "tiny")
    assert info.tracking_uri.startswith("sqlite:////") and (output / "tiny" / "mlflow.db").is_file()
    client = mlflow.MlflowClient(info.tracking_uri)
    assert client.get_experiment(info.experiment_id).name == "tiny"
    runs = client.search_runs([info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 2
    assert {r.data.params["model.objective"] for r in runs} == {"beta_vae", "ada_gvae"}
    for run in runs:
        assert run.info.status == "FINISHED"
        missing = [k for k in EXPECTED if k not in run.data.metrics]
        assert not missing, missing
        assert run.data.tags[PARENT_TAG] == info.parent_run_id
        assert run.data.tags[STUDY_TAG] == "tiny" and run.data.tags[TRIAL_ID_TAG]
        assert run.data.params["train.steps"] == "8" and run.data.params["split"] == "dittadi_hues"
        # train/* logged at every report step, exactly once each
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert steps == [4, 8]
        assert 0.0 <= run.data.metrics["dis/dci_d"] <= 1.0
        assert run.data.metrics["eval/elbo"] < 0
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"reconstructions.png", "trial_config.json"} <= artifacts
    parent = client.get_run(info.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["study/trials_finished"] == 2
    # Tune's own state sits in the study folder too (what resume needs)
    assert (output / "tiny" / "tune").is_dir()


@pytest.mark.heavy  # the study through Tune: the fault tier
def test_rerun_refuses_to_overwrite_unless_asked(finished_study) -> None:
    spec, _, output = finished_study
    before = (output / "tiny" / "mlflow.db").stat().st_mtime_ns
    with pytest.raises(StudyError, match="--overwrite"):
        run_study(spec, output=output, verbose=0)
    assert (output / "tiny" / "mlflow.db").stat().st_mtime_ns == before


@pytest.mark.heavy  # the study through Tune: the fault tier
def test_analyze_writes_parquet_and_prints_the_correlation_table(finished_study) -> None:
    _, _, output = finished_study
    result = CliRunner().invoke(app, ["analyze", "tiny", "--output", str(output)])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(output / "tiny" / "analysis" / "results.parquet")
    assert len(table) == 2 and "metrics.dis/dci_d" in table.columns
    assert "params.model.beta" in table.columns
    assert "transfer/ood2_a/gbt/mae" in result.output and "dci_d" in result.output
    # Each step said as it starts, on stderr (not a terminal here: a line each).
    steps = [line for line in result.stderr.splitlines() if line.startswith("analyze [")]
    assert [s.split("] ")[1].split(" ")[0] for s in steps] == [
        "reading",
        "rank",
        "model",
        "findings:",
        "figures",
        "writing",
        "logging",
    ], result.stderr
    assert "analyze [" not in result.stdout
    # Where the trials' time went, summed over both runs (`raystudy.phases`).
    assert "Where the time went (2 runs timed):" in result.output
    frame = load_results(output / "tiny")
    assert set(frame["status"]) == {"FINISHED"}


def test_spearman_table_is_rank_correlation_with_blanks_for_too_few_trials() -> None:
    frame = pd.DataFrame(
        {
            "metrics.dis/dci_d": [0.1, 0.2, 0.3, 0.4],
            "metrics.eval/elbo": [1.0, 1.0, 1.0, 1.0],  # constant -> undefined, blank
            "metrics.transfer/a/gbt/mae": [0.9, 0.8, 0.5, 0.1],  # monotone decreasing
            "metrics.transfer/a/gbt/mae/hue": [1, 2, 3, 4],  # per-factor: not a column
            "metrics.transfer/b/mlp/mae": [1.0, 2.0, None, None],  # 2 trials: blank
        }
    )
    table = spearman_table(frame)
    assert list(table.columns) == ["transfer/a/gbt/mae", "transfer/b/mlp/mae"]
    assert table.loc["dis/dci_d", "transfer/a/gbt/mae"] == pytest.approx(-1.0)
    assert pd.isna(table.loc["eval/elbo", "transfer/a/gbt/mae"])
    assert pd.isna(table.loc["dis/dci_d", "transfer/b/mlp/mae"])


def test_trial_resources_fit_the_cluster(ray_local, capsys: pytest.CaptureFixture[str]) -> None:
    from raystudy.study.setup import trial_resources

    base = load_spec(ROOT / "search_spaces" / "smoke.yaml")  # asks gpu 0.25; this cluster has none
    assert trial_resources(base) == {"cpu": 1.0, "gpu": 0.0}
    assert "No GPU in the Ray cluster" in capsys.readouterr().out
    too_big = load_spec(ROOT / "search_spaces" / "smoke.yaml", ["resources.cpu=64"])
    with pytest.raises(StudyError, match=r"resources.cpu=64 .*no node.*nodes: 2 CPU/0 GPU"):
        trial_resources(too_big)


@pytest.mark.heavy  # the study through Tune: the fault tier
def test_status_and_plan_read_the_runs_phase_timings(finished_study) -> None:
    _, _, output = finished_study
    status = CliRunner().invoke(app, ["status", "tiny", "--output", str(output)])
    assert status.exit_code == 0, status.output
    assert "Where the time went (2 runs timed):" in status.output
    rows = {
        line.split()[0] for line in status.output.split("Where the time went")[1].splitlines()[1:]
    }
    assert {"train", "metric/dci", "probe/gbt", "mlflow", "total"} <= rows
    # Each trial is its own kind (one objective each): both measured, so nothing is timed.
    args = ["plan", str(ROOT / "search_spaces" / "smoke.yaml"), "--output", str(output)]
    plan = CliRunner().invoke(app, [*args, *(a for o in TINY for a in ("--set", o))])
    assert plan.exit_code == 0, plan.output
    assert plan.output.count("measured:") == 2 and "calibrated in" not in plan.output
    assert "from the study's measured runs (every kind; 2 finished run(s) in" in plan.output
