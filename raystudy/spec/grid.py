"""Grid expansion and the dotted-key helpers a spec's grid points are made of.

A mapping is the product of its values, a list the union of its items; `flatten` turns a
nested point into `model.beta`-style keys (MLflow params, labels, tables). A study's grid may
add blocks under `also`: each is the grid with some axes replaced, so that a condition that
exists on one dataset only (Montero 2022's MPI3D variants) joins a grid that crosses datasets
with conditions without being crossed with the others.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping
from typing import Any


def expand_grid(node: Any) -> list[Any]:
    """All combinations a grid node stands for.

    A mapping is the product of its values; a list is the union of its items (a mapping item is
    expanded on its own, a list item is taken literally, a scalar is one value); a scalar is
    itself.
    """
    if isinstance(node, Mapping):
        keys = list(node)
        options = [expand_grid(node[k]) for k in keys]
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*options)]
    if isinstance(node, list):
        out: list[Any] = []
        for item in node:
            if isinstance(item, Mapping):
                out.extend(expand_grid(item))
            else:
                out.append(item)
        return out
    return [node]


#: The grid key whose blocks are added to the grid's own product (`grid_points`).
ALSO = "also"


def grid_points(grid: Mapping[str, Any]) -> list[Any]:
    """A study grid's points: the product of its axes, then for each block of `also` the
    product of the axes with the block's axes in place of the grid's (a block's new keys are
    axes of that block only)."""
    main = {k: v for k, v in grid.items() if k != ALSO}
    points = expand_grid(main)
    for block in grid.get(ALSO) or []:
        points.extend(expand_grid({**main, **block}))
    return points


def grid_size(grid: Mapping[str, Any]) -> int:
    """How many points `grid_points(grid)` returns, without expanding it."""
    main = {k: v for k, v in grid.items() if k != ALSO}
    return count_grid(main) + sum(count_grid({**main, **b}) for b in grid.get(ALSO) or [])


def count_grid(node: Any) -> int:
    """How many points `expand_grid(node)` returns, without expanding it."""
    if isinstance(node, Mapping):
        return math.prod(count_grid(v) for v in node.values())
    if isinstance(node, list):
        return sum(count_grid(item) if isinstance(item, Mapping) else 1 for item in node)
    return 1


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in d.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def varying(points: list[dict[str, Any]]) -> list[str]:
    """The dotted keys whose value differs between grid points (for names and tables)."""
    flats = [flatten(p) for p in points]
    keys = sorted({k for f in flats for k in f})
    return [k for k in keys if len({repr(f.get(k)) for f in flats}) > 1]


# -- loading -------------------------------------------------------------------------------
