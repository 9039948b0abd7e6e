"""What a training loop reports, for one model or a stack of S: the train/* means of each
report window, each model's history, which models diverged, and when a report or a checkpoint
is due. `raystudy.training.loop.train` (S = 1) and `raystudy.training.stacked.train_stacked`
share it, so a lone model and a stacked one report, diverge and resume by the same rules.
"""

from __future__ import annotations

import math

import torch

from raystudy.keys import train_key
from raystudy.spec import TrainConfig

#: One model's train/* row of a report; None once that model has diverged.
Row = dict[str, float] | None


def report_due(step: int, config: TrainConfig) -> bool:
    """A report every `report_every` steps, and one at the last step."""
    return step % config.report_every == 0 or step == config.steps


def checkpoint_due(step: int, config: TrainConfig) -> bool:
    """A checkpoint every `checkpoint_interval` steps (on report steps), and one at the last."""
    return step % config.checkpoint_interval == 0 or step == config.steps


class ReportWindow:
    """Sums each model's reported scalars since the last report (on the device: a `.item()`
    per step would synchronise a GPU every step) and closes the window into rows.

    A model whose window mean loss is not finite has diverged at that step: it gets no
    further rows, and `diverged` keeps (step, loss) for it. `histories` and `diverged` are
    part of a checkpoint; pass them back to resume.
    """

    def __init__(
        self,
        size: int,
        device: torch.device,
        histories: list[list[dict[str, float]]] | None = None,
        diverged: dict[int, tuple[int, float]] | None = None,
    ) -> None:
        self.size = size
        self.device = device
        self.histories = [list(h) for h in histories] if histories else [[] for _ in range(size)]
        self.diverged: dict[int, tuple[int, float]] = dict(diverged or {})
        self.names: list[str] = []
        self.sums: torch.Tensor | None = None
        self.count = 0

    def add(self, scalars: dict[str, torch.Tensor]) -> None:
        """One step's scalars: name -> a value per model ([S]) or, for one model, a scalar.
        The names must be the same at every step."""
        if self.sums is None:
            self.names = list(scalars)
            self.sums = torch.zeros(self.size, len(self.names), device=self.device)
        elif list(scalars) != self.names:
            raise RuntimeError(
                f"the objective's reported terms changed: {self.names} -> {list(scalars)}"
            )
        values = torch.stack(
            [scalars[n].detach().to(self.sums.dtype).reshape(self.size) for n in self.names],
            dim=1,
        )
        self.sums += values
        self.count += 1

    def close(self, step: int) -> list[Row]:
        """Each model's means since the last report as train/* rows (None for a diverged
        model), appended to its history; the window starts again."""
        assert self.sums is not None, "close() before any add()"
        means = (self.sums / self.count).tolist()
        rows: list[Row] = []
        for s in range(self.size):
            loss = means[s][self.names.index("loss")]
            if s not in self.diverged and not math.isfinite(loss):
                self.diverged[s] = (step, loss)
            if s in self.diverged:
                rows.append(None)
                continue
            row = {train_key(n): v for n, v in zip(self.names, means[s], strict=True)}
            self.histories[s].append({"step": float(step), **row})
            rows.append(row)
        self.sums.zero_()
        self.count = 0
        return rows
