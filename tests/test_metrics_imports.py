"""The metrics layer must stay usable without Ray or MLflow (docs/architecture/layout.md,
section 2)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_metrics_loads_neither_ray_nor_mlflow():
    code = (
        "import sys, raystudy.metrics, raystudy.metrics.probes; "
        "print(sorted(m for m in ('ray', 'mlflow') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
