"""Selectors: sets of factor combinations written as data (YAML), compiled to boolean masks.

A split (architecture.md section 4) names its sets with selectors instead of code, so built-in and
user-written splits go through the same validated path. The language:

- ``None`` or ``{}``: every combination.
- ``{factor: [i, j]}`` or ``{factor: {in: [i, j]}}``: the factor's index is in the set;
  ``{factor: i}`` is short for ``{factor: [i]}``.
- ``{factor: {ge: a}}``, ``{factor: {le: b}}``: index bounds (inclusive); ``in``, ``ge`` and
  ``le`` may be combined in one mapping, meaning all of them.
- ``{all: [s, ...]}``, ``{any: [s, ...]}``, ``{not: s}``: intersection, union, complement.
- ``{random: {p: 0.8, seed: 0}}``: a fixed pseudo-random fraction ``p`` of the grid. Whether a
  combination is in depends only on its row-major grid position and the seed, so
  ``{not: {random: ...}}`` with the same arguments is exactly its complement (an iid split).
  With ``exact: true`` the set holds exactly ``round(p * N)`` of the grid's ``N`` combinations
  (the ones with the smallest hashes; needs ``N <= 5e7``), for splits whose test fraction is
  prescribed (Schott et al. 2022's random split).
- ``{grid_index: [i, j, ...]}``: the combinations at these flat row-major positions of the
  factor grid (``numpy.ravel_multi_index`` of the factor indices); a list or an integer
  array. Meant for sets read from files (:mod:`raystudy.data.splits.index_files`), not for typing.
- A mapping with several keys is the intersection of its entries. ``all``, ``any``, ``not``,
  ``random`` and ``grid_index`` are operators, never factor names.

Validation (:func:`check`) happens before anything runs and names the offending field path
(e.g. ``split.scenarios.ood1_a.train.hue``), the valid names, and the allowed index range.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from raystudy.data.core.factors import FactorSpace
from raystudy.registry import unknown_name_message

Selector = Mapping[str, Any] | None
# A compiled selector; it always returns a fresh array, so callers may combine in place.
Mask = Callable[[np.ndarray], np.ndarray]

COMBINATORS = ("all", "any", "not", "random", "grid_index")
CONDITIONS = ("in", "ge", "le")


class SelectorError(ValueError):
    """A selector that is malformed, names an unknown factor or index, or selects nothing."""


def check(selector: Selector, space: FactorSpace, where: str) -> None:
    """Raise :class:`SelectorError` naming ``where`` unless ``selector`` is well formed."""
    compile_selector(selector, space, where)


def evaluate(selector: Selector, indices: np.ndarray, space: FactorSpace) -> np.ndarray:
    """Boolean mask over the rows of an ``(N, K)`` index array: which are in the set."""
    space.validate(indices)
    return compile_selector(selector, space, "selector")(np.asarray(indices))


def compile_selector(selector: Selector, space: FactorSpace, where: str) -> Mask:
    """Validate once, return a function from ``(N, K)`` indices to a boolean mask."""
    if selector is None:
        return _everything
    if not isinstance(selector, Mapping):
        raise SelectorError(
            f"{where}: a selector must be a mapping (e.g. {{hue: [0, 1]}}), "
            f"got {type(selector).__name__} {selector!r}"
        )
    terms = [_compile_term(key, value, space, f"{where}.{key}") for key, value in selector.items()]
    if not terms:
        return _everything
    if len(terms) == 1:
        return terms[0]
    return _intersection(terms)


def bounding_box(selector: Selector, space: FactorSpace) -> list[np.ndarray]:
    """Per-factor boolean vectors whose product contains the selected set.

    Exact for intersections of factor conditions (the common case: then the set *is* the box),
    a superset otherwise (``not`` and ``random`` say nothing per factor, ``any`` unions the
    boxes). Samplers draw inside the box, which keeps rejection sampling cheap for small sets,
    and an empty box proves an empty set. The selector must already pass :func:`check`.
    """
    full = [np.ones(size, dtype=bool) for size in space.sizes]
    if not selector:
        return full
    box = full
    for key, value in selector.items():
        if key == "all":
            for sub in value:
                box = _box_and(box, bounding_box(sub, space))
        elif key == "any":
            subs = [bounding_box(sub, space) for sub in value]
            union = [np.zeros(size, dtype=bool) for size in space.sizes]
            for sub in subs:
                union = [u | s for u, s in zip(union, sub, strict=True)]
            box = _box_and(box, union)
        elif key == "grid_index":
            positions = np.unravel_index(np.asarray(value, dtype=np.int64), space.sizes)
            seen = [np.zeros(size, dtype=bool) for size in space.sizes]
            for allowed, column in zip(seen, positions, strict=True):
                allowed[column] = True
            box = _box_and(box, seen)
        elif key in COMBINATORS:
            continue
        else:
            col = space.index(key)
            allowed = _condition_values(value, space.sizes[col])
            box = [b & allowed if i == col else b for i, b in enumerate(box)]
    return box


# --- compilation ---------------------------------------------------------------------------


def _compile_term(key: object, value: Any, space: FactorSpace, where: str) -> Mask:
    if key == "all" or key == "any":
        subs = _compile_list(value, space, where)
        if not subs:
            # The empty intersection is everything, the empty union nothing, as in set theory.
            return _everything if key == "all" else _nothing
        return _intersection(subs) if key == "all" else _union(subs)
    if key == "not":
        inner = compile_selector(value, space, where)
        return lambda idx: ~inner(idx)
    if key == "random":
        return _compile_random(value, space, where)
    if key == "grid_index":
        return _compile_grid_index(value, space, where)
    if not isinstance(key, str) or key not in space.names:
        raise SelectorError(
            f"{where}: {unknown_name_message('factor', key, space.names)} "
            f"(or an operator: {', '.join(COMBINATORS)})"
        )
    col = space.index(key)
    allowed = _condition_values(value, space.sizes[col], where, key)
    return lambda idx: allowed[idx[:, col]]


def _compile_list(value: Any, space: FactorSpace, where: str) -> list[Mask]:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise SelectorError(f"{where}: expected a list of selectors, got {value!r}")
    return [compile_selector(sub, space, f"{where}[{i}]") for i, sub in enumerate(value)]


def _condition_values(
    value: Any, size: int, where: str = "selector", factor: str = "factor"
) -> np.ndarray:
    """The indices of one factor that a condition accepts, as a boolean vector of ``size``."""
    allowed = np.ones(size, dtype=bool)
    if isinstance(value, Mapping):
        unknown = [op for op in value if op not in CONDITIONS]
        if unknown:
            raise SelectorError(
                f"{where}: unknown operator {unknown[0]!r}; allowed: {', '.join(CONDITIONS)} "
                f"(combine factors with {', '.join(COMBINATORS[:3])})"
            )
        conditions = dict(value)
    else:
        conditions = {"in": value}
    positions = np.arange(size)
    if "in" in conditions:
        members = conditions["in"]
        if not isinstance(members, Sequence) or isinstance(members, str | bytes):
            members = [members]
        members_where = f"{where}.in" if isinstance(value, Mapping) else where
        chosen = np.zeros(size, dtype=bool)
        for i, member in enumerate(members):
            chosen[_index(member, size, f"{members_where}[{i}]", factor)] = True
        allowed &= chosen
    if "ge" in conditions:
        allowed &= positions >= _index(conditions["ge"], size, f"{where}.ge", factor)
    if "le" in conditions:
        allowed &= positions <= _index(conditions["le"], size, f"{where}.le", factor)
    return allowed


def _index(value: Any, size: int, where: str, factor: str) -> int:
    # bool is an int in Python; `hue: [true]` is a typo, not index 1.
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise SelectorError(f"{where}: factor {factor!r} takes integer indices, got {value!r}")
    if not 0 <= value < size:
        raise SelectorError(
            f"{where}: index {value} is out of range for factor {factor!r} (allowed 0..{size - 1})"
        )
    return int(value)


MAX_EXACT_GRID = 50_000_000


def _compile_grid_index(value: Any, space: FactorSpace, where: str) -> Mask:
    positions = np.asarray(value)
    if positions.ndim != 1 or (positions.size and positions.dtype.kind not in "iu"):
        raise SelectorError(
            f"{where}: expected a list of integer grid positions, got an array of shape "
            f"{positions.shape} and dtype {positions.dtype}"
        )
    total = space.total
    if total > MAX_EXACT_GRID:
        raise SelectorError(
            f"{where}: the grid has {total} combinations; a set of grid positions is held as "
            f"a table over the whole grid and needs at most {MAX_EXACT_GRID}"
        )
    if positions.size and not (positions.min() >= 0 and positions.max() < total):
        bad = positions[(positions < 0) | (positions >= total)][0]
        raise SelectorError(
            f"{where}: grid position {int(bad)} is out of range (allowed 0..{total - 1})"
        )
    table = np.zeros(total, dtype=bool)
    table[positions] = True
    sizes = space.sizes
    return lambda idx: table[np.ravel_multi_index(tuple(idx.T), sizes)]


def _compile_random(value: Any, space: FactorSpace, where: str) -> Mask:
    if not isinstance(value, Mapping) or set(value) - {"p", "seed", "exact"} or "p" not in value:
        raise SelectorError(
            f"{where}: expected {{p: <fraction>, seed: <int>, exact: <bool>}}, got {value!r}"
        )
    p = value["p"]
    seed = value.get("seed", 0)
    exact = value.get("exact", False)
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise SelectorError(f"{where}.p: expected a fraction in [0, 1], got {p!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SelectorError(f"{where}.seed: expected an integer, got {seed!r}")
    if not isinstance(exact, bool):
        raise SelectorError(f"{where}.exact: expected true or false, got {exact!r}")
    sizes = space.sizes
    if exact:
        if space.total > MAX_EXACT_GRID:
            raise SelectorError(
                f"{where}.exact: the grid has {space.total} combinations; an exact fraction "
                f"is computed over the whole grid and needs at most {MAX_EXACT_GRID}"
            )
        threshold = _exact_threshold(space.total, float(p), seed)
    else:
        # Compare 53-bit uniforms against p: exact for every p a float can hold.
        threshold = float(p)

    def mask(idx: np.ndarray) -> np.ndarray:
        flat = np.ravel_multi_index(tuple(idx.T), sizes).astype(np.uint64)
        return _unit_hash(flat, seed) < threshold

    return mask


@functools.lru_cache(maxsize=16)
def _exact_threshold(total: int, p: float, seed: int) -> float:
    """The hash value below which exactly ``round(p * total)`` grid positions fall: the
    ``k``-th smallest of all of them (53-bit values: ties are vanishingly rare)."""
    k = round(p * total)
    if k == 0:
        return 0.0
    if k == total:
        return 2.0
    hashes = _unit_hash(np.arange(total, dtype=np.uint64), seed)
    return float(np.partition(hashes, k)[k])


_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = (1 << 64) - 1


def _unit_hash(keys: np.ndarray, seed: int) -> np.ndarray:
    """Uniform [0, 1) float per uint64 key: the SplitMix64 output function (Steele, Lea &
    Flood 2014, "Fast splittable pseudorandom number generators") applied to a seed-dependent
    point of its Weyl sequence. Pure integer arithmetic, so it is the same on every machine."""
    offset = np.uint64(_splitmix64_scalar(seed & _MASK64))
    # uint64 arithmetic wraps modulo 2^64, which is what the hash wants.
    with np.errstate(over="ignore"):
        z = offset + (keys + np.uint64(1)) * _GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _splitmix64_scalar(x: int) -> int:
    """The same mixing on one Python int (for the seed), masked to 64 bits."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


# --- mask algebra ----------------------------------------------------------------------------


def _everything(idx: np.ndarray) -> np.ndarray:
    return np.ones(idx.shape[0], dtype=bool)


def _nothing(idx: np.ndarray) -> np.ndarray:
    return np.zeros(idx.shape[0], dtype=bool)


def _intersection(terms: list[Mask]) -> Mask:
    def mask(idx: np.ndarray) -> np.ndarray:
        out = terms[0](idx)
        for term in terms[1:]:
            out &= term(idx)
        return out

    return mask


def _union(terms: list[Mask]) -> Mask:
    def mask(idx: np.ndarray) -> np.ndarray:
        out = terms[0](idx)
        for term in terms[1:]:
            out |= term(idx)
        return out

    return mask


def _box_and(a: list[np.ndarray], b: list[np.ndarray]) -> list[np.ndarray]:
    return [x & y for x, y in zip(a, b, strict=True)]
