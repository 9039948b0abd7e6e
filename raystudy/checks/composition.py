"""What the composition objective (Montero et al. 2021, Sec. 2.3) cannot be combined with,
refused before Ray starts: the decoder test, which retrains a decoder on single images'
codes, while a composition model's decoder only ever reads composed codes. (A split without a
held-out set is refused with the data, `raystudy.checks.data`; the pair options `k` and
`kl_mode` written for a composition model, which trains on triples, with every option written
for an objective that does not read it, `raystudy.checks.model_options`.)
"""

from __future__ import annotations

from typing import Any

from raystudy.models.objectives import OBJECTIVES
from raystudy.spec import StudySpec, TrialConfig
from raystudy.spec.grid import flatten
from raystudy.spec.problems import point_label


def composition_problems(
    spec: StudySpec, trials: list[TrialConfig], points: list[dict[str, Any]], label: str
) -> list[tuple[str, str]]:
    """(field, message) for the composition trials that ask for the decoder test (module
    doc); once."""
    problems: dict[str, tuple[str, str]] = {}
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        if not OBJECTIVES.get(trial.model.objective).triples:
            continue
        name = trial.model.objective
        keys = flatten(point)
        steps = trial.evaluation.decoder_test_steps
        if steps and "decoder" not in problems:
            field = "evaluation.decoder_test_steps"
            where = f"{point_label(label, i, point)} -> {field}" if field in keys else field
            problems["decoder"] = (
                where,
                f"is {steps}, but objective {name!r} decodes composed codes, never one "
                "image's, so the decoder test (a decoder retrained on single images' codes) "
                "does not apply; set it to 0",
            )
    return list(problems.values())
