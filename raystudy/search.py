"""Search spaces: distributions written in YAML, sampled through Optuna.

A space mirrors the trial config like a grid does. Its leaves are one-key mappings:
`{uniform: [lo, hi]}`, `{loguniform: [lo, hi]}`, `{int: [lo, hi]}` (or `[lo, hi, step]`),
`{choice: [a, b, ...]}`; any other scalar is a constant. A list of mappings is a set of
conditional alternatives: the sampler first picks one (a categorical parameter named after the
path), then samples only that alternative's parameters, so `beta` exists only for beta-VAE and
`gamma` only for FactorVAE. Parameter names carry the alternative they belong to, which keeps
each name's distribution fixed across trials as Optuna requires.

`random` search draws its points up front with Optuna's RandomSampler (so they are fixed,
reproducible and resumable like a grid); `optuna` search samples them one trial at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna

DISTRIBUTIONS = ("uniform", "loguniform", "int", "choice")


def is_distribution(node: Any) -> bool:
    return isinstance(node, Mapping) and len(node) == 1 and next(iter(node)) in DISTRIBUTIONS


def check_space(node: Any, path: str = "search.space") -> list[tuple[str, str]]:
    """Structural problems of a space, as (field path, message) pairs."""
    problems: list[tuple[str, str]] = []
    if is_distribution(node):
        kind, args = next(iter(node.items()))
        if kind == "choice":
            if not isinstance(args, list) or not args:
                problems.append((f"{path}.choice", "needs a non-empty list of values"))
        elif (
            not isinstance(args, list)
            or len(args) not in (2, 3)
            or not all(isinstance(a, int | float) and not isinstance(a, bool) for a in args)
        ):
            problems.append((f"{path}.{kind}", "needs [low, high] (or [low, high, step] for int)"))
        elif args[0] >= args[1]:
            problems.append((f"{path}.{kind}", f"low must be below high, got {args}"))
        elif kind == "loguniform" and args[0] <= 0:
            problems.append((f"{path}.{kind}", f"bounds must be positive, got {args}"))
        return problems
    if isinstance(node, Mapping):
        for key, value in node.items():
            problems += check_space(value, f"{path}.{key}")
    elif isinstance(node, list):
        if not node:
            problems.append((path, "an empty list of alternatives"))
        for i, item in enumerate(node):
            if not isinstance(item, Mapping) or is_distribution(item):
                problems.append(
                    (f"{path}[{i}]", "alternatives are mappings; use {choice: [...]} for values")
                )
            else:
                problems += check_space(item, f"{path}[{i}]")
    return problems


def alternative_label(alternative: Mapping[str, Any], index: int) -> str:
    """`objective=beta_vae` from an alternative's constants (its index if it has none)."""
    consts = [
        f"{k}={v}"
        for k, v in alternative.items()
        if not isinstance(v, Mapping | list) and not is_distribution(v)
    ]
    return ",".join(consts) or str(index)


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
        labels = [alternative_label(alt, i) for i, alt in enumerate(node)]
        chosen = trial.suggest_categorical(path, labels)
        return suggest(trial, node[labels.index(chosen)], f"{path}[{chosen}]")
    return node


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
