"""Whether a study's models can train as stacks (`execution.seeds_per_trial` > 1): each
objective must be stackable, the models of a stack may differ only in loss weights every
objective of the grid has, and their split must not draw its sets from the seed (a stack's
models share one split)."""

from __future__ import annotations

from raystudy.data.splits.registry import split_tag, split_uses_seed
from raystudy.models.objectives import OBJECTIVES
from raystudy.spec import SpecError, StudySpec


def check_stackable(spec: StudySpec, source: str) -> None:
    field = "execution.seeds_per_trial"
    if spec.search.method == "optuna":
        raise SpecError(
            source, [(field, "optuna proposes one configuration per trial; use 1 with optuna")]
        )
    seeded = sorted({split_tag(t.split) for t in spec.trials() if split_uses_seed(t.split)})
    if seeded:
        raise SpecError(
            source,
            [
                (
                    field,
                    f"split {', '.join(seeded)} draws its sets from each model's seed "
                    "(held_out: per_seed), and the models of a stack share one split; use 1, "
                    "or a split option that holds for every seed",
                )
            ],
        )
    names = {spec.model.objective, *(t.model.objective for t in spec.trials())}
    unstackable = sorted(n for n in names if not OBJECTIVES.get(n).stackable)
    if unstackable:
        why = "; ".join(f"{n}: {OBJECTIVES.get(n).unstackable_because}" for n in unstackable)
        raise SpecError(
            source,
            [
                (
                    field,
                    f"objective(s) {', '.join(unstackable)} cannot be stacked ({why}); use 1, "
                    "or leave them out of the grid",
                )
            ],
        )
    # A stack shares one batched pass: its models may differ only in what weights a loss
    # term, and only where every objective of the grid has that weight.
    weights = set.intersection(*(set(OBJECTIVES.get(n).loss_weights) for n in names))
    allowed = ", ".join(f"model.{w}" for w in sorted(weights)) or "none for " + ", ".join(
        sorted(names)
    )
    problems = [
        (
            f"execution.stack_over[{i}]",
            f"{key!r} cannot vary within a stack; allowed: {allowed} (the loss weights shared "
            "by every objective of the grid)",
        )
        for i, key in enumerate(spec.execution.stack_over)
        if not key.startswith("model.") or key.removeprefix("model.") not in weights
    ]
    if problems:
        raise SpecError(source, problems)
