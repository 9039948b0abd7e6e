"""Search spaces: distributions written in YAML, sampled through Optuna.

A space mirrors the trial config like a grid does. Its leaves are one-key mappings:
`{uniform: [lo, hi]}`, `{loguniform: [lo, hi]}`, `{int: [lo, hi]}` (or `[lo, hi, step]`),
`{choice: [a, b, ...]}`; any other scalar is a constant. A list of mappings is a set of
conditional alternatives: the sampler first picks one (a categorical parameter named after the
path), then samples only that alternative's parameters, so `beta` exists only for beta-VAE and
`gamma` only for FactorVAE. Parameter names carry the alternative they belong to, which keeps
each name's distribution fixed across trials as Optuna requires. An alternative is named by its
constants (`objective=beta_vae`); alternatives with the same constants also carry their index
(`objective=beta_vae#0`, `objective=beta_vae#1`), so that each of them is drawn.

`random` search draws its points up front with Optuna's RandomSampler (so they are fixed,
reproducible and resumable like a grid); `optuna` search samples them one trial at a time.

`check_space` judges a space before anything is drawn: each distribution's arguments, and
every value it can produce (both bounds, every option) against the trial-config field it sets.
`bound_points` are the overrides that reach each of those values, for validating them against
the whole trial config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import optuna
from pydantic import BaseModel, ValidationError

from raystudy.spec.trial_config import OPTIONS

DISTRIBUTIONS = ("uniform", "loguniform", "int", "choice")

#: What each distribution's arguments must be, as the error messages say it.
ALLOWED = {
    "uniform": "needs [low, high]: two finite numbers, low < high",
    "loguniform": "needs [low, high]: two finite numbers, 0 < low < high",
    "int": "needs [low, high] or [low, high, step]: whole numbers, low < high, step >= 1, "
    "high - low a multiple of step",
    "choice": "needs a non-empty list of values",
}

#: Refused values of one distribution that an error message lists.
MAX_SHOWN = 3

#: Optuna samples integers through float64, which holds every whole number only up to here.
INT_LIMIT = 2**53


def is_distribution(node: Any) -> bool:
    return isinstance(node, Mapping) and len(node) == 1 and next(iter(node)) in DISTRIBUTIONS


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past float's range, which Optuna could not sample
        return False


def _is_whole(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def argument_problem(kind: str, args: Any) -> str | None:
    """What is wrong with a distribution's arguments (None: nothing), with what is allowed."""
    if kind == "choice":
        return None if isinstance(args, list) and args else ALLOWED["choice"]
    if not isinstance(args, list) or not all(_is_number(a) for a in args):
        return f"{ALLOWED[kind]}; got {args!r}"
    if kind == "int":
        if len(args) not in (2, 3) or not all(_is_whole(a) for a in args):
            return f"{ALLOWED[kind]}; got {args}"
        low, high, step = (int(a) for a in (*args, 1)[:3])
        if max(abs(low), abs(high)) > INT_LIMIT:
            return (
                f"{ALLOWED[kind]}, at most 2**53 in size (Optuna samples integers as floats); "
                f"got {args}"
            )
        if low >= high:
            return f"low must be below high ({ALLOWED[kind]}); got {args}"
        if step < 1:
            return f"step must be a whole number >= 1 ({ALLOWED[kind]}); got {args}"
        if (high - low) % step:
            # Optuna would quietly lower high to the last reachable value; say so instead.
            top = high - (high - low) % step
            return (
                f"high - low must be a multiple of step: {args} can reach at most {top}, "
                f"so write [{low}, {top}, {step}] ({ALLOWED[kind]})"
            )
        return None
    if len(args) != 2 or not all(_is_finite(a) for a in args):
        return f"{ALLOWED[kind]}; got {args}"
    low, high = args
    if low >= high:
        return f"low must be below high ({ALLOWED[kind]}); got {args}"
    if not _is_finite(high - low):
        return f"{ALLOWED[kind]}, and high - low finite; got {args}"
    if kind == "loguniform" and low <= 0:
        return f"bounds must be positive ({ALLOWED[kind]}); got {args}"
    return None


def reachable(kind: str, args: list[Any]) -> list[tuple[str, Any]]:
    """The values of a sound distribution that decide whether a field accepts all it draws:
    both bounds of a range (a numeric field's constraints are bounds, so what lies between two
    accepted values is accepted too), each option of a choice; as (what it is, value) pairs."""
    if kind == "choice":
        return [(f"option #{i}", option) for i, option in enumerate(args)]
    if kind == "int":
        return [("low bound", int(args[0])), ("high bound", int(args[1]))]
    return [("low bound", args[0]), ("high bound", args[1])]


def _submodel(model: type[BaseModel] | None, name: Any) -> type[BaseModel] | None:
    """The config model of field `name` of `model` (None: not a model, or no such field)."""
    field = model.model_fields.get(name) if model is not None and isinstance(name, str) else None
    if field is None:
        return None
    options = getattr(field.annotation, "__args__", None) or (field.annotation,)
    models = [t for t in options if isinstance(t, type) and issubclass(t, BaseModel)]
    return models[0] if models else None


def field_problem(
    model: type[BaseModel],
    name: str,
    value: Any,
    context: Mapping[str, Any] | None = None,
    beside: Mapping[str, Any] | None = None,
) -> str | None:
    """Why field `name` of `model` refuses `value` on its own (None: it accepts it), under
    the validation `context` (the registered names, `raystudy.spec.trial_config.NAMES`).

    Only the field's own rules count: a rule of the whole block (checkpoint_every a multiple
    of report_every) depends on the spec's other values, which validate_schema checks with them.
    An objective's option is judged by its objective's rules, given `beside` it
    (``{"objective": "ada_gvae"}``); the block's check names the option (``"k: ..."``).
    """
    try:
        model.model_validate({**(beside or {}), name: value}, context=context)
    except ValidationError as exc:
        messages = []
        for err in exc.errors():
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["loc"][:1] == (name,):
                messages.append(msg)
            elif not err["loc"] and msg.startswith(f"{name}: "):
                messages.append(msg.removeprefix(f"{name}: "))
        return " or ".join(dict.fromkeys(messages)) or None
    return None


def check_space(
    node: Any,
    config: type[BaseModel],
    path: str = "search.space",
    context: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Problems of a space, as (field path, message) pairs: a distribution's arguments, and a
    value it can produce that the field it sets refuses. `config` is the model the space's top
    keys are fields of (the trial config); `context` is passed to its validation."""
    if isinstance(node, Mapping) and not is_distribution(node):
        return [p for k, v in node.items() for p in _check(v, f"{path}.{k}", config, k, context)]
    return _check(node, path, None, None, context)


def _problem(
    owner: type[BaseModel],
    name: str,
    value: Any,
    context: Mapping[str, Any] | None,
    beside: Mapping[str, Any] | None,
) -> str | None:
    """Why `value` is refused for field `name` of `owner` (None: accepted, or not ours to
    judge). An objective's option of the model block is judged by the objective written
    beside it; with none written there, a value every objective with that option refuses is
    refused (the trials, built on the spec's base objective, judge the rest)."""
    if name in owner.model_fields:
        return field_problem(owner, name, value, context)
    objective = (beside or {}).get("objective")
    if isinstance(objective, str):
        return field_problem(owner, name, value, context, {"objective": objective})
    schemas = (context or {}).get(OPTIONS) or {}
    having = [o for o, schema in schemas.items() if name in schema.model_fields]
    why = [field_problem(owner, name, value, context, {"objective": o}) for o in having]
    if not having or any(w is None for w in why):
        return None  # unknown options are reported by the spec's own field check
    return why[0]


def _check(
    node: Any,
    path: str,
    owner: type[BaseModel] | None,
    name: Any,
    context: Mapping[str, Any] | None,
    beside: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Problems of `node`, which sets field `name` of `owner` (None: a field we cannot see)
    in the mapping `beside`."""
    problems: list[tuple[str, str]] = []
    if is_distribution(node):
        kind, args = next(iter(node.items()))
        problem = argument_problem(kind, args)
        if problem is not None:
            return [(f"{path}.{kind}", problem)]
        if owner is None or not isinstance(name, str):
            return []
        refused = [
            f"{what} {value!r} ({why})"
            for what, value in reachable(kind, args)
            if (why := _problem(owner, name, value, context, beside)) is not None
        ]
        if not refused:
            return []
        # One problem per field, and a long choice of bad options does not flood the message.
        shown = "; ".join(refused[:MAX_SHOWN])
        if len(refused) > MAX_SHOWN:
            shown += f"; and {len(refused) - MAX_SHOWN} more of its values"
        where = f"{{{kind}: {args}}}" if kind != "choice" else "the choice"
        return [(path, f"{where} reaches values this field refuses: {shown}")]
    if isinstance(node, Mapping):
        inner = _submodel(owner, name)
        for key, value in node.items():
            problems += _check(value, f"{path}.{key}", inner, key, context, node)
    elif isinstance(node, list):
        if not node:
            problems.append((path, "an empty list of alternatives"))
        for i, item in enumerate(node):
            if not isinstance(item, Mapping) or is_distribution(item):
                problems.append(
                    (f"{path}[{i}]", "alternatives are mappings; use {choice: [...]} for values")
                )
            else:
                # An alternative sets the fields of the same block as the list it is in.
                problems += _check(item, f"{path}[{i}]", owner, name, context, beside)
    return problems


def alternative_label(alternative: Mapping[str, Any], index: int) -> str:
    """`objective=beta_vae` from an alternative's constants (its index if it has none)."""
    consts = [
        f"{k}={v}"
        for k, v in alternative.items()
        if not isinstance(v, Mapping | list) and not is_distribution(v)
    ]
    return ",".join(consts) or str(index)


def alternative_labels(alternatives: list[Mapping[str, Any]]) -> list[str]:
    """One distinct label per alternative: `alternative_label`, and where two alternatives
    share one (the same constants, different ranges), each of those also carries its index.

    The label is the value of the categorical parameter that picks an alternative: two equal
    labels would be one value, and only the first of their alternatives would ever be drawn.
    Labels that were distinct stay as they were, so the parameters of existing Optuna studies
    keep their names.
    """
    labels = [alternative_label(alt, i) for i, alt in enumerate(alternatives)]
    labels = [
        f"{label}#{i}" if labels.count(label) > 1 else label for i, label in enumerate(labels)
    ]
    if len(set(labels)) < len(labels):  # a constant's text looks like another's label
        labels = [f"{label}#{i}" for i, label in enumerate(labels)]
    return labels


def suggest(trial: optuna.Trial, node: Any, path: str = "") -> Any:
    """Sample `node` with `trial`: the override (nested mapping) it stands for."""
    if is_distribution(node):
        kind, args = next(iter(node.items()))
        if kind == "uniform":
            return trial.suggest_float(path, args[0], args[1])
        if kind == "loguniform":
            return trial.suggest_float(path, args[0], args[1], log=True)
        if kind == "int":
            step = args[2] if len(args) == 3 else 1
            return trial.suggest_int(path, int(args[0]), int(args[1]), step=int(step))
        return args[trial.suggest_categorical(path, list(range(len(args))))]
    if isinstance(node, Mapping):
        return {k: suggest(trial, v, f"{path}.{k}" if path else k) for k, v in node.items()}
    if isinstance(node, list):
        labels = alternative_labels(node)
        chosen = trial.suggest_categorical(path, labels)
        return suggest(trial, node[labels.index(chosen)], f"{path}[{chosen}]")
    return node


def bound_points(space: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Overrides that between them set every distribution to each value of `reachable` and
    pick every alternative, each with the rest of the space at its first value (low bounds,
    first options, first alternatives); deterministic, one per such value (duplicates
    dropped), so that validating them checks a space's whole range against the whole trial
    config in time linear in its size, unlike random draws that may miss a bad corner."""
    points: list[dict[str, Any]] = []
    seen: set[str] = set()
    for point in _variants(space):
        key = repr(point)
        if key not in seen:
            seen.add(key)
            points.append(point)
    return points


def _first(node: Any) -> Any:
    """`node` with every distribution at its first reachable value, every first alternative."""
    if is_distribution(node):
        kind, args = next(iter(node.items()))
        return reachable(kind, args)[0][1]
    if isinstance(node, Mapping):
        return {k: _first(v) for k, v in node.items()}
    if isinstance(node, list):
        return _first(node[0])
    return node


def _variants(node: Any) -> list[Any]:
    """`_first(node)` with one value changed at a time, for each value `bound_points` covers."""
    if is_distribution(node):
        kind, args = next(iter(node.items()))
        return [value for _, value in reachable(kind, args)]
    if isinstance(node, Mapping):
        first = {k: _first(v) for k, v in node.items()}
        out = [first]
        for key, value in node.items():
            out += [{**first, key: variant} for variant in _variants(value)]
        return out
    if isinstance(node, list):
        return [variant for alternative in node for variant in _variants(alternative)]
    return [node]


def define_by_run(trial: optuna.Trial, space: Mapping[str, Any]) -> dict[str, Any]:
    """For Tune's OptunaSearch: sample the space; the override travels as one constant."""
    return {"override": suggest(trial, space)}


def random_points(space: Mapping[str, Any], num_samples: int, seed: int) -> list[dict[str, Any]]:
    """`num_samples` overrides drawn independently and reproducibly from `space`."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    points = []
    for _ in range(num_samples):
        trial = study.ask()
        points.append(suggest(trial, space))
        study.tell(trial, 0.0)
    return points
