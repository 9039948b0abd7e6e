"""The metrics layer must stay usable without Ray or MLflow (docs/architecture/layout.md,
section 2)."""

from __future__ import annotations

from fresh_imports import loaded_after


def test_importing_metrics_loads_neither_ray_nor_mlflow():
    code = "import raystudy.metrics, raystudy.metrics.probes"
    assert loaded_after(code, ("ray", "mlflow")) == []
