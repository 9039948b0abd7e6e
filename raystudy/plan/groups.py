"""Which trials cost the same: the groups `plan` calibrates once each.

A trial's training costs what its objective (pairs for the weakly supervised ones, a
discriminator for FactorVAE), architecture, dataset (resolution, channels, rendering) and
batch size make it cost; its latent size, beta, seed, warm-up and noise change it little.
Its evaluation costs what its dataset, split (how many probe scenarios), code width and
evaluation settings make it cost. Steps scale training alone, so trials differing in steps
share both groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raystudy.models import OBJECTIVES
from raystudy.spec import TrialConfig


def _label(name: str, options: dict[str, Any]) -> str:
    if not options:
        return name
    return f"{name}({', '.join(f'{k}={v}' for k, v in sorted(options.items()))})"


def dataset_label(config: TrialConfig) -> str:
    return _label(config.dataset.name, config.dataset.options)


def split_label(config: TrialConfig) -> str:
    split = config.split
    if isinstance(split, str):
        return split
    return _label(str(split.get("name", "custom")), dict(split.get("options", {})))


@dataclass(frozen=True, order=True)
class TrainingGroup:
    objective: str
    architecture: str
    dataset: str
    batch_size: int

    @classmethod
    def of(cls, config: TrialConfig) -> TrainingGroup:
        m = config.model
        return cls(m.objective, m.architecture, dataset_label(config), config.train.batch_size)

    def __str__(self) -> str:
        return f"{self.objective}/{self.architecture}/{self.dataset}/b{self.batch_size}"

    def likeness(self, other: TrainingGroup) -> tuple[bool, bool, bool, bool]:
        """How much of its cost `other` shares, most telling first (for costing a group
        that was not calibrated from one that was)."""
        return (
            self.architecture == other.architecture,
            self.dataset == other.dataset,
            self.objective == other.objective,
            self.batch_size == other.batch_size,
        )


@dataclass(frozen=True, order=True)
class EvaluationGroup:
    dataset: str
    split: str
    width: int  # columns of the code the metrics and probes fit
    factor_sized: bool
    code_is_ground_truth: bool
    evaluation: str  # the evaluation settings, as JSON

    @classmethod
    def of(cls, config: TrialConfig, num_factors: int) -> EvaluationGroup:
        objective = OBJECTIVES.get(config.model.objective)
        sized = objective.code_is_factor_sized or objective.code_is_ground_truth
        return cls(
            dataset_label(config),
            split_label(config),
            num_factors if sized else config.model.latent_dim,
            objective.code_is_factor_sized,
            objective.code_is_ground_truth,
            config.evaluation.model_dump_json(),
        )

    def __str__(self) -> str:
        truth = "/factors" if self.code_is_ground_truth else ""
        return f"{self.dataset}/{self.split}/z{self.width}{truth}"

    def likeness(self, other: EvaluationGroup) -> tuple[bool, bool, bool, int]:
        return (
            self.evaluation == other.evaluation,
            self.dataset == other.dataset,
            self.split == other.split,
            -abs(self.width - other.width),
        )


def kind_label(training: TrainingGroup, evaluation: EvaluationGroup, steps: int) -> str:
    """objective/architecture/dataset/batch, split/code width, steps."""
    return f"{training}, {evaluation.split}/z{evaluation.width}, {steps} steps"
