"""A study logging to a real `mlflow server` on 127.0.0.1 instead of a local sqlite file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest
from tiny import LIGHT, SMOKE, tiny

from raystudy.spec import load_spec
from raystudy.study import run_study


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{root / 'server.db'}",
            "--artifacts-destination",
            str(root / "artifacts"),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the server starts workers of its own: stop the whole group
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("mlflow server did not answer /health within 90 s")
    yield url, root
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def test_study_logs_every_trial_to_the_server(ray_local, server, tmp_path: Path) -> None:
    url, root = server
    spec = load_spec(SMOKE, tiny("served", LIGHT, f"tracking.uri={url}", "grid={seed: [0, 1]}"))
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok, outcome.states
    assert outcome.info.tracking_uri == url
    assert not (tmp_path / "served" / "mlflow.db").exists()  # nothing went to a local store
    client = mlflow.MlflowClient(url)
    runs = client.search_runs([outcome.info.experiment_id], "tags.`raystudy.role` = 'trial'")
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    for run in runs:
        assert "transfer/ood2_a/gbt/mae" in run.data.metrics
        assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [4, 8]
        # artifacts went through the server into its artifact store
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"reconstructions.png"}
    assert any(p.name == "reconstructions.png" for p in (root / "artifacts").rglob("*"))
