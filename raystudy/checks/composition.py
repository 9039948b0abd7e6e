"""What the composition objective (Montero et al. 2021, Sec. 2.3) cannot be combined with,
refused before Ray starts: the decoder test, which retrains a decoder on single images'
codes, while a composition model's decoder only ever reads composed codes. (A split without
a held-out set is refused with the data, `raystudy.checks.data`.)"""

from __future__ import annotations

from typing import Any

from raystudy.models.objectives import OBJECTIVES
from raystudy.spec import StudySpec, TrialConfig
from raystudy.spec.problems import point_label


def composition_problems(
    spec: StudySpec, trials: list[TrialConfig], points: list[dict[str, Any]], label: str
) -> list[tuple[str, str]]:
    """(field, message) for each composition trial that asks for the decoder test; once."""
    field = "evaluation.decoder_test_steps"
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        if not OBJECTIVES.get(trial.model.objective).triples:
            continue
        if trial.evaluation.decoder_test_steps:
            own = trial.model == spec.model and trial.evaluation == spec.evaluation
            where = field if own else f"{point_label(label, i, point)} -> {field}"
            return [
                (
                    where,
                    f"is {trial.evaluation.decoder_test_steps}, but objective "
                    f"{trial.model.objective!r} decodes composed codes, never one image's, so "
                    "the decoder test (a decoder retrained on single images' codes) does not "
                    "apply; set it to 0",
                )
            ]
    return []
