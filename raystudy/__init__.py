"""raystudy: distributed studies of disentangled representations and their OOD transfer.

`raystudy.evaluate_encoder` scores any encoder as a trial is scored (`raystudy.evaluate`); it
is imported on first use, so `import raystudy` stays free of torch.
"""

from __future__ import annotations

import os
from typing import Any

# Before anything imports MLflow (its import starts the telemetry client): where MLflow's
# telemetry server cannot be reached (a cluster's nodes, a laptop offline), its config thread
# removes `_MLFLOW_TELEMETRY_SESSION_ID` from os.environ while the process's HTTP requests copy
# os.environ, and the request fails with KeyError('_MLFLOW_TELEMETRY_SESSION_ID'): 2 of 64
# trial runs lost their final scores that way against an `mlflow server` in bench.store_writes
# (2026-11-27). Off unless the user has said otherwise.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from raystudy.version import RELEASE as __version__

__all__ = ["__version__", "evaluate_encoder"]


def __getattr__(name: str) -> Any:
    if name == "evaluate_encoder":
        from raystudy.evaluate import evaluate_encoder

        return evaluate_encoder
    raise AttributeError(f"module 'raystudy' has no attribute {name!r}")
