"""MLflow's telemetry is off in every raystudy process (raystudy/__init__.py says why)."""

from __future__ import annotations

import os
import subprocess
import sys


def test_raystudy_turns_mlflow_telemetry_off_before_mlflow_starts_it() -> None:
    """MLflow's telemetry thread, offline, removes an environment variable under the process's
    HTTP requests (KeyError '_MLFLOW_TELEMETRY_SESSION_ID', writes lost: raystudy/__init__.py).
    Outside pytest and CI (which MLflow itself exempts), `import raystudy` first must leave
    MLflow without a telemetry client; a user's own setting is kept."""
    exempt = {"PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS", "MLFLOW_DISABLE_TELEMETRY"}
    env = {k: v for k, v in os.environ.items() if k not in exempt and k != "DO_NOT_TRACK"}
    code = (
        "import os, raystudy, mlflow; from mlflow.telemetry.client import get_telemetry_client; "
        "print(os.environ['MLFLOW_DISABLE_TELEMETRY'], get_telemetry_client() is None)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.stdout.split() == ["true", "True"], ran.stderr[-2000:]
    said = "import os, raystudy; print(os.environ['MLFLOW_DISABLE_TELEMETRY'])"
    kept = subprocess.run(
        [sys.executable, "-c", said],
        env={**env, "MLFLOW_DISABLE_TELEMETRY": "false"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kept.stdout.strip() == "false", kept.stderr[-2000:]
