"""What the composition objective (Montero et al. 2021, Sec. 2.3) cannot be combined with,
refused before Ray starts: the decoder test, which retrains a decoder on single images'
codes, while a composition model's decoder only ever reads composed codes; and the pair
options of the weakly supervised objectives (`model.k`, `model.kl_mode`) written for a
composition model, which trains on triples and would silently ignore them. (A split without
a held-out set is refused with the data, `raystudy.checks.data`.)

A pair option counts as written for a composition trial when its grid point (or search draw)
sets it, or when the spec's own `model` section both is composition and sets it; a base `k`
that a grid's weakly supervised models read is not refused for the composition models beside
them, as every objective ignores the fields of the others.
"""

from __future__ import annotations

from typing import Any

from raystudy.models.objectives import OBJECTIVES
from raystudy.spec import StudySpec, TrialConfig
from raystudy.spec.grid import flatten
from raystudy.spec.problems import point_label

#: ModelConfig fields that only configure training on pairs.
PAIR_OPTIONS = ("k", "kl_mode")


def _written_pair_options(spec: StudySpec, point: dict[str, Any]) -> list[str]:
    keys = flatten(point)
    written = [f for f in PAIR_OPTIONS if f"model.{f}" in keys]
    own = spec.model.objective == "composition" and "model.objective" not in keys
    if own:
        written += [f for f in PAIR_OPTIONS if f in spec.model.model_fields_set]
    return sorted(set(written))


def composition_problems(
    spec: StudySpec, trials: list[TrialConfig], points: list[dict[str, Any]], label: str
) -> list[tuple[str, str]]:
    """(field, message) for the composition trials that ask for the decoder test or write a
    pair option (module doc); each problem once."""
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
        for option in _written_pair_options(spec, point):
            if option in problems:
                continue
            field = f"model.{option}"
            where = f"{point_label(label, i, point)} -> {field}" if field in keys else field
            problems[option] = (
                where,
                f"objective {name!r} trains on composition triples, not pairs: it does not "
                f"read {option}; remove it (k and kl_mode are for ada_gvae and ml_vae)",
            )
    return list(problems.values())
