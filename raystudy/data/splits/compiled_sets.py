"""A split's sets compiled for sampling: each selector's mask, its per-factor bounding box and
the tables that draw uniformly inside that box, and the moves inside the box that make the
partner of a weakly supervised pair (:class:`raystudy.data.splits.split.Split` draws with them
by rejection: a draw in the box that the mask refuses is drawn again)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raystudy.data.core.factors import FactorSpace
from raystudy.data.splits.selectors import Mask, Selector, bounding_box, compile_selector


@dataclass(frozen=True)
class CompiledSet:
    """A compiled set: its mask, bounding box and the tables that sample inside the box."""

    selector: Selector
    where: str
    mask: Mask
    counts: np.ndarray  # [K] allowed values per factor in the box
    values: np.ndarray  # [K, max_size] allowed indices, left-aligned (padding is 0)
    rank: np.ndarray  # [K, max_size] position of an index among the allowed ones, -1 if out

    @classmethod
    def build(cls, selector: Selector, space: FactorSpace, where: str) -> CompiledSet:
        mask = compile_selector(selector, space, where)
        box = bounding_box(selector, space)
        width = max(space.sizes)
        values = np.zeros((space.num_factors, width), dtype=np.int64)
        rank = np.full((space.num_factors, width), -1, dtype=np.int64)
        for k, allowed in enumerate(box):
            members = np.flatnonzero(allowed)
            values[k, : members.size] = members
            rank[k, members] = np.arange(members.size)
        counts = np.array([int(a.sum()) for a in box], dtype=np.int64)
        return cls(selector, where, mask, counts, values, rank)

    def draw_in_box(self, n: int, gen: np.random.Generator) -> np.ndarray:
        """``n`` combinations uniform over the bounding box, ``(n, K)`` int64."""
        pos = gen.integers(0, self.counts, size=(n, self.counts.size))
        return self.values[np.arange(self.counts.size), pos]


def change_factors(
    r: CompiledSet, first: np.ndarray, k: int, varying: np.ndarray, gen: np.random.Generator
) -> np.ndarray:
    """Copy of ``first`` with ``k`` distinct factors per row (from ``varying``) moved to
    another value inside the role's bounding box, uniformly among the others."""
    n = first.shape[0]
    rows = np.arange(n)
    # k distinct factors per row, uniformly: the k smallest of i.i.d. keys.
    keys = gen.random((n, varying.size))
    chosen = varying[np.argsort(keys, axis=1)[:, :k]]
    second = first.copy()
    for j in range(k):
        col = chosen[:, j]
        m = r.counts[col]
        current = r.rank[col, first[rows, col]]
        # A shift by 1..m-1 positions (mod m) is uniform over the m-1 other allowed values.
        shifted = (current + gen.integers(1, m)) % m
        second[rows, col] = r.values[col, shifted]
    return second


def laplace_partner(
    r: CompiledSet,
    first: np.ndarray,
    free: np.ndarray,
    sizes: np.ndarray,
    rates: np.ndarray,
    gen: np.random.Generator,
) -> np.ndarray:
    """``first`` with each factor in ``free`` redrawn from the discretised Laplace of
    :meth:`raystudy.data.splits.split.Split.sample_laplace_pairs` (row i at rate ``rates[i]``),
    inside the role's box, and one free factor moved off its value in rows that did not
    change."""
    second = first.copy()
    rows = np.arange(first.shape[0])

    def redraw(col: int, at: np.ndarray, exclude_start: bool) -> None:
        values = r.values[col, : r.counts[col]]
        start = first[at, col][:, None]
        scale = np.log(sizes[col]) / rates[at][:, None]
        weights = np.exp(-np.abs(values[None, :] - start) / scale)
        if exclude_start:
            weights[values[None, :] == start] = 0.0
        cdf = np.cumsum(weights, axis=1)
        u = gen.random(at.size)[:, None] * cdf[:, -1:]
        second[at, col] = values[np.minimum((cdf <= u).sum(axis=1), values.size - 1)]

    for col in free:
        redraw(int(col), rows, exclude_start=False)
    same = np.flatnonzero((second == first).all(axis=1))
    if same.size:
        cols = free[gen.integers(0, free.size, size=same.size)]
        for col in np.unique(cols):
            redraw(int(col), same[cols == col], exclude_start=True)
    return second
