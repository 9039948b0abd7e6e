"""raystudy: distributed studies of disentangled representations and their OOD transfer.

`raystudy.evaluate_encoder` scores any encoder as a trial is scored (`raystudy.evaluate`); it
is imported on first use, so `import raystudy` stays free of torch.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "evaluate_encoder"]


def __getattr__(name: str) -> Any:
    if name == "evaluate_encoder":
        from raystudy.evaluate import evaluate_encoder

        return evaluate_encoder
    raise AttributeError(f"module 'raystudy' has no attribute {name!r}")
