"""What the composition objective (Montero et al. 2021, Sec. 2.3; 2022's CompositionNet)
cannot be combined with, refused before Ray starts: `reconstruct_inputs` with
`train.input_noise`, since the inputs it reconstructs would then be the noisy images (a triple
batch holds no clean copy of them, `raystudy.models.objectives.composition`). (A split
without a held-out set is refused with the data, `raystudy.checks.data`; the pair options `k`
and `kl_mode` written for a composition model, which trains on triples, with every option
written for an objective that does not read it, `raystudy.checks.model_options`.)

The decoder test applies to a composition model as to any other: it is Montero et al.
(2022)'s protocol on composition-trained base models (`raystudy.training.decoder_retrain`).
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
    """(field, message) for the composition trials that reconstruct their inputs under input
    noise (module doc); once."""
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        if not OBJECTIVES.get(trial.model.objective).triples:
            continue
        if trial.model.options.get("reconstruct_inputs") and trial.train.input_noise:
            field = "model.reconstruct_inputs"
            keys = flatten(point)
            where = f"{point_label(label, i, point)} -> {field}" if field in keys else field
            return [
                (
                    where,
                    "is true while train.input_noise is on: the composition objective would "
                    "reconstruct the noisy inputs (a triple batch has no clean copy of them); "
                    "turn one of them off",
                )
            ]
    return []
