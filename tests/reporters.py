"""Reporters for running trials in the test process, as Tune would but without Ray."""

from __future__ import annotations

from typing import Any

from raystudy.trials.single import LocalReporter


class StopAfter(LocalReporter):
    """Keeps checkpoints like Tune and, once, dies at the report of `step` (a killed worker)."""

    def __init__(self, step: int) -> None:
        super().__init__()
        self.stop_at: int | None = step

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        super().report(metrics, state)
        if self.stop_at is not None and metrics.get("step") == self.stop_at:
            self.stop_at = None
            raise KeyboardInterrupt("killed")
