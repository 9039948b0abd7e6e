"""Validating a study spec as far as the schema can: the spec, every trial it expands to
(grid points, random draws, the corners of a search space), the trial count, repeated trials,
ASHA's report budget and `--set`s that change nothing.

`raystudy.checks` calls this first and then checks what needs the datasets, models and
metrics; nothing here imports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from raystudy.spec.grid import ALSO, deep_merge, flatten, grid_size
from raystudy.spec.problems import (
    SpecError,
    distinct,
    point_label,
    problems_of,
    unknown_fields,
)
from raystudy.spec.search_space import bound_points, random_points
from raystudy.spec.study_spec import AshaConfig, StudySpec
from raystudy.spec.trial_config import (
    NAMES,
    OPTIONS,
    KnownNames,
    ObjectiveOptions,
    TrialConfig,
    all_options,
)
from raystudy.spec.yaml_io import shape_problem, split_assignment

#: Every trial is validated here, then scheduled by Tune and tracked by MLflow one by one: a
#: grid beyond this is a typo (an extra axis) far more often than a plan.
MAX_TRIALS = 100_000


@dataclass(frozen=True)
class Expanded:
    """A spec validated by the schema, with the trials it expands to (for the checks above)."""

    spec: StudySpec
    trials: list[TrialConfig]
    #: The overrides each trial is made of, and what to call one in a message.
    points: list[dict[str, Any]]
    label: str
    #: The search space's corners (every bound, option and alternative) and their trials.
    corner_trials: list[TrialConfig]
    corners: list[dict[str, Any]]


def validate_schema(
    raw: Any,
    source: str,
    names: KnownNames | None,
    options: ObjectiveOptions | None = None,
) -> Expanded:
    """The spec and its trials, each validated on its own and together as far as the schema
    can say; SpecError naming every problem with file and field.

    `names` are the registered names of each kind (`raystudy.checks.names`), checked in every
    trial; None checks no name. `options` are the objectives' option models, which validate
    each trial's model options; None checks none. What needs datasets, models or metrics is
    not checked here.
    """
    context: dict[str, Any] | None = None
    if names is not None or options is not None:
        context = {NAMES: names, OPTIONS: options}
    if not isinstance(raw, Mapping):
        raise SpecError(source, [("", f"a study spec is a mapping, got {type(raw).__name__}")])
    shape = shape_problem(raw)
    if shape is not None:
        raise SpecError(source, [shape])
    try:
        spec = StudySpec.model_validate(raw, context=context)
    except ValidationError as exc:
        raise SpecError(source, problems_of(exc, root=StudySpec)) from None
    option_names = all_options(options) if options is not None else None
    main = {k: v for k, v in spec.grid.items() if k != ALSO}
    unknown = unknown_fields(main, TrialConfig, "grid", option_names)
    for i, block in enumerate(spec.grid.get(ALSO) or []):
        unknown += unknown_fields(block, TrialConfig, f"grid.{ALSO}[{i}]", option_names)
    unknown += unknown_fields(spec.search.space, TrialConfig, "search.space", option_names)
    if unknown:
        raise SpecError(source, [(u.split(": ", 1)[0], u.split(": ", 1)[1]) for u in unknown])
    if spec.search.method != "grid" and spec.grid:
        raise SpecError(
            source,
            [
                (
                    "grid",
                    f"search method {spec.search.method} samples search.space; leave grid empty",
                )
            ],
        )
    size = grid_size(spec.grid) if spec.search.method == "grid" else spec.search.num_samples
    if size > MAX_TRIALS:
        field = "grid" if spec.search.method == "grid" else "search.num_samples"
        raise SpecError(
            source,
            [(field, f"{size} trials; a study holds at most {MAX_TRIALS} (split it into several)")],
        )
    if spec.search.method == "optuna":
        # The points come while the study runs: validate a fixed sample of what it can draw.
        points, label = random_points(spec.search.space, 64, seed=0), "search.space draw"
    else:
        points = spec.points()
        label = "grid point" if spec.search.method == "grid" else "search.space draw"
    if not points:
        raise SpecError(source, [("grid", "expands to no trial (an axis is an empty list)")])
    # Draws may miss a bad corner: every bound, option and alternative is validated too.
    corners = bound_points(spec.search.space) if spec.search.method != "grid" else []
    corner_trials, problems = _validate_points(spec, corners, "search.space corner", context)
    trials, more = _validate_points(spec, points, label, context)
    if problems or more:
        raise SpecError(source, distinct(problems + more))
    if spec.search.asha is not None:
        _check_asha_budget(spec.search.asha, [*trials, *corner_trials], source)
    if spec.search.method == "grid":
        # Two equal trials would train the same model twice under one run name.
        refuse_repeats(trials, points, range(len(trials)), label, "grid", source)
    return Expanded(spec, trials, points, label, corner_trials, corners)


def _validate_points(
    spec: StudySpec,
    points: list[dict[str, Any]],
    label: str,
    context: Mapping[str, Any] | None,
) -> tuple[list[TrialConfig], list[tuple[str, str]]]:
    """The trial config of each point merged into the spec's values, and the problems of
    those that do not validate (one report per distinct problem, not per point)."""
    problems: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    trials: list[TrialConfig] = []
    base = spec.base()
    for i, point in enumerate(points):
        try:
            trials.append(TrialConfig.model_validate(deep_merge(base, point), context=context))
        except ValidationError as exc:
            for p, m in problems_of(exc, root=TrialConfig):
                if (p, m) not in seen:
                    seen.add((p, m))
                    problems.append((f"{point_label(label, i, point)} -> {p}", m))
    return trials, problems


def refuse_repeats(
    trials: list[TrialConfig],
    points: list[dict[str, Any]],
    among: Iterable[int],
    label: str,
    field: str,
    source: str,
) -> None:
    first: dict[str, int] = {}
    for i in among:
        key = repr(trials[i].model_dump(mode="json"))
        if key in first:
            j = first[key]
            raise SpecError(
                source,
                [
                    (
                        field,
                        f"{point_label(label, i, points[i])} is the same trial as "
                        f"{point_label(label, j, points[j])}: give every trial its own values "
                        "(e.g. distinct seeds)",
                    )
                ],
            )
        first[key] = i


def _check_asha_budget(asha: AshaConfig, trials: list[TrialConfig], source: str) -> None:
    """ASHA ends every trial at its `max_t`-th report; one that reports more is cut off before
    its results, which are its last report: each such trial would end unevaluated."""
    longest = max(trials, key=lambda t: t.train.tune_reports)
    if longest.train.tune_reports > asha.max_t:
        t = longest.train
        raise SpecError(
            source,
            [
                (
                    "search.asha.max_t",
                    f"{asha.max_t} is fewer than the {t.tune_reports} reports a trial makes "
                    f"(train.steps {t.steps} / report_every {t.report_every}, plus one with its "
                    "results): ASHA would stop every trial that survives its rungs before it is "
                    f"evaluated; set max_t to at least {t.tune_reports}, or raise report_every",
                )
            ],
        )


def refuse_shadowed(
    spec: StudySpec, merged: dict[str, Any], overrides: list[str], source: str
) -> None:
    """A `--set` of a field that every grid point (or every alternative of the search space)
    sets is replaced in every trial by the point's value: it would do nothing, silently. One
    that some points leave alone sets the base value of those, and stands. `merged` is the
    spec as the overrides left it (`apply_overrides`)."""
    leaves: dict[str, str] = {}  # each field an override sets -> the override's path
    for item in overrides:
        pair = split_assignment(item)
        if pair is None:  # apply_overrides refused it already
            continue
        path = pair[0]
        if path.split(".")[0] in ("grid", "search"):
            continue
        value: Any = merged
        for part in path.split("."):
            # a later --set of a parent may have replaced this one: nothing of it is left
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            continue
        fields = flatten(value, path + ".") if isinstance(value, Mapping) and value else {path: 0}
        leaves.update(dict.fromkeys(fields, path))
    if not leaves:
        return
    grid = spec.search.method == "grid"
    where = "grid" if grid else "search.space"
    keys = [set(flatten(p)) for p in (spec.points() if grid else bound_points(spec.search.space))]
    shadowed: dict[str, list[str]] = {}
    for leaf, path in leaves.items():
        if all(leaf in k for k in keys):
            shadowed.setdefault(path, []).append(leaf)
    problems = [
        (
            f"--set {path}",
            f"the {where} sets {', '.join(fields)} in every trial, which replaces the value set "
            f"here; override the {where} instead (e.g. --set '{where}.{path.split('.')[0]}=...')",
        )
        for path, fields in shadowed.items()
    ]
    if problems:
        raise SpecError(source, problems)
