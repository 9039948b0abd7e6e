"""A study logging to a real `mlflow server` on 127.0.0.1 instead of a local sqlite file."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from mlflow_server import MlflowServer
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.study.driver import run_study
from raystudy.tags import TRIAL_RUNS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("server")
    served = MlflowServer(root).start()
    yield served.url, root
    served.stop()


@pytest.mark.heavy  # a study through Tune to a real server: the fault tier
def test_study_logs_every_trial_to_the_server(ray_local, server, tmp_path: Path) -> None:
    url, root = server
    spec = load_spec(SMOKE, tiny("served", LIGHT, f"tracking.uri={url}", "grid={seed: [0, 1]}"))
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok, outcome.states
    assert outcome.info.tracking_uri == url
    assert not (tmp_path / "served" / "mlflow.db").exists()  # nothing went to a local store
    client = mlflow.MlflowClient(url)
    runs = client.search_runs([outcome.info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    for run in runs:
        assert "transfer/ood2_a/gbt/mae" in run.data.metrics
        assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [4, 8]
        # artifacts went through the server into its artifact store
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"reconstructions.png"}
    assert any(p.name == "reconstructions.png" for p in (root / "artifacts").rglob("*"))
