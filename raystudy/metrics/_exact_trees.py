"""sklearn's exact regression-tree growth, for all the trees of a boosting stage at once.

At each stage of :func:`raystudy.metrics._boosting.fit_boosted_trees` one least-squares
tree per class is grown on the same inputs and that class's residuals. sklearn
(``DecisionTreeRegressor(criterion="squared_error")`` inside ``GradientBoostingClassifier``,
Friedman 2001; its older "friedman_mse" ranks splits the same way) grows each node by trying
every feature and, for each, every position between two sorted training values of the
node's samples that differ by more than 1e-7 (its ``FEATURE_THRESHOLD``), keeping the first
split with the largest proxy improvement

    S_L^2 / n_L + S_R^2 / n_R     (S: sum of the residuals on a side, n: its samples)

which exceeds the decrease of the residuals' sum of squares by the node's S^2 / n; the
threshold is the midpoint of the two values (the lower value if the midpoint rounds onto
the upper). A node with fewer than two samples or residual variance at most float64's
epsilon is a leaf.

Here the columns are sorted once per fit and each level of every tree of the stage is found
in one pass per feature over the sorted rows, keeping running sums per (tree, node): the
same candidates, criterion and tie rule (strictly better replaces; features visited in the
stage's order) as sklearn, at the cost of n x trees x features steps per level. Compiled
with numba; the compiled code is cached next to this file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

#: sklearn's FEATURE_THRESHOLD: values closer than this are not split apart.
FEATURE_THRESHOLD = 1e-7
#: sklearn's leaf test on a node's impurity (variance of its residuals).
EPSILON = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class SortedColumns:
    """Per feature, the training rows in ascending order of value, and those values."""

    order: NDArray[np.int32]  # (D, N)
    values: NDArray[np.float32]  # (D, N)


def sort_columns(x: NDArray[np.float32]) -> SortedColumns:
    """Sort each column of ``x`` (N, D) once for a whole fit."""
    order = np.argsort(x, axis=0, kind="stable").T.astype(np.int32)
    values = np.take_along_axis(x.T, order.astype(np.int64), axis=1)
    return SortedColumns(np.ascontiguousarray(order), np.ascontiguousarray(values))


@dataclass(frozen=True)
class Stage:
    """One stage's trees in heap layout (children of node a are 2a + 1 and 2a + 2).

    Attributes:
        leaf: (N, T) the leaf every training row reaches in each of the T trees.
        feature: (T, nodes) split feature of each node, -1 for leaves and absent nodes.
        threshold: (T, nodes) split threshold (``x <= threshold`` goes left).
    """

    leaf: NDArray[np.int32]
    feature: NDArray[np.int32]
    threshold: NDArray[np.float64]


def grow_stage(
    x: NDArray[np.float32],
    columns: SortedColumns,
    residual: NDArray[np.float64],
    feature_order: NDArray[np.int64],
    max_depth: int,
    gain: NDArray[np.float64],
) -> Stage:
    """Grow one depth-``max_depth`` least-squares tree per column of ``residual``.

    Args:
        x: (N, D) float32 training inputs, C-contiguous.
        columns: :func:`sort_columns` of ``x``.
        residual: (N, T) float64 targets, one tree per column.
        feature_order: the order features are tried in (ties go to the first).
        max_depth: depth of the trees.
        gain: (D,) float64; each split's decrease of the residuals' sum of squares is added
            to its feature's entry (sklearn's unnormalised impurity importance, times N).
    """
    num_trees = residual.shape[1]
    nodes = 2 ** (max_depth + 1) - 1
    leaf = np.zeros((x.shape[0], num_trees), dtype=np.int32)
    feature = np.full((num_trees, nodes), -1, dtype=np.int32)
    threshold = np.full((num_trees, nodes), np.inf)
    _grow(
        x,
        columns.order,
        columns.values,
        np.ascontiguousarray(residual, dtype=np.float64),
        np.asarray(feature_order, dtype=np.int64),
        max_depth,
        leaf,
        feature,
        threshold,
        gain,
    )
    return Stage(leaf, feature, threshold)


def apply_stage(stage: Stage, x: NDArray[np.float32], max_depth: int) -> NDArray[np.int32]:
    """(M, T) leaf of every row of ``x`` in each tree of ``stage``."""
    out = np.zeros((x.shape[0], stage.feature.shape[0]), dtype=np.int32)
    _apply(
        np.ascontiguousarray(x, dtype=np.float32), stage.feature, stage.threshold, max_depth, out
    )
    return out


@numba.njit(cache=True, nogil=True)
def _grow(
    x: NDArray[np.float32],
    order: NDArray[np.int32],
    values: NDArray[np.float32],
    residual: NDArray[np.float64],
    feature_order: NDArray[np.int64],
    max_depth: int,
    leaf: NDArray[np.int32],
    feature: NDArray[np.int32],
    threshold: NDArray[np.float64],
    gain: NDArray[np.float64],
) -> None:
    n, num_features = x.shape
    num_trees = residual.shape[1]
    width = 2**max_depth
    total = np.zeros((num_trees, width))
    squares = np.zeros((num_trees, width))
    count = np.zeros((num_trees, width))
    open_ = np.zeros((num_trees, width), dtype=np.bool_)
    best = np.empty((num_trees, width))
    best_feature = np.empty((num_trees, width), dtype=np.int64)
    best_low = np.empty((num_trees, width))
    best_high = np.empty((num_trees, width))
    left_sum = np.empty((num_trees, width))
    left_count = np.empty((num_trees, width))
    last = np.empty((num_trees, width))
    for depth in range(max_depth):
        first = 2**depth - 1
        level = 2**depth
        total[:] = 0.0
        squares[:] = 0.0
        count[:] = 0.0
        for row in range(n):
            for t in range(num_trees):
                a = leaf[row, t] - first
                if a >= 0:
                    r = residual[row, t]
                    total[t, a] += r
                    squares[t, a] += r * r
                    count[t, a] += 1.0
        any_open = False
        for t in range(num_trees):
            for a in range(level):
                c = count[t, a]
                is_open = False
                if c >= 2.0:
                    mean = total[t, a] / c
                    is_open = squares[t, a] / c - mean * mean > EPSILON
                open_[t, a] = is_open
                any_open = any_open or is_open
                best[t, a] = -np.inf
                best_feature[t, a] = -1
        if not any_open:
            break
        for fi in range(num_features):
            f = feature_order[fi]
            left_sum[:] = 0.0
            left_count[:] = 0.0
            for i in range(n):
                row = order[f, i]
                v = np.float64(values[f, i])
                for t in range(num_trees):
                    a = leaf[row, t] - first
                    if a < 0 or not open_[t, a]:
                        continue
                    nl = left_count[t, a]
                    if nl > 0.0 and v > last[t, a] + FEATURE_THRESHOLD:
                        sl = left_sum[t, a]
                        sr = total[t, a] - sl
                        proxy = sl * sl / nl + sr * sr / (count[t, a] - nl)
                        if proxy > best[t, a]:
                            best[t, a] = proxy
                            best_feature[t, a] = f
                            best_low[t, a] = last[t, a]
                            best_high[t, a] = v
                    left_sum[t, a] += residual[row, t]
                    left_count[t, a] = nl + 1.0
                    last[t, a] = v
        for t in range(num_trees):
            for a in range(level):
                f = best_feature[t, a]
                if f < 0:
                    continue
                node = first + a
                cut = best_low[t, a] / 2.0 + best_high[t, a] / 2.0
                if cut == best_high[t, a] or np.isinf(cut):
                    cut = best_low[t, a]
                feature[t, node] = f
                threshold[t, node] = cut
                gain[f] += best[t, a] - total[t, a] * total[t, a] / count[t, a]
        for row in range(n):
            for t in range(num_trees):
                node = leaf[row, t]
                a = node - first
                if a >= 0 and feature[t, node] >= 0:
                    go_left = x[row, feature[t, node]] <= threshold[t, node]
                    leaf[row, t] = 2 * node + 1 if go_left else 2 * node + 2


@numba.njit(cache=True, nogil=True)
def _apply(
    x: NDArray[np.float32],
    feature: NDArray[np.int32],
    threshold: NDArray[np.float64],
    max_depth: int,
    out: NDArray[np.int32],
) -> None:
    num_trees = feature.shape[0]
    for row in range(x.shape[0]):
        for t in range(num_trees):
            node = 0
            for _ in range(max_depth):
                f = feature[t, node]
                if f < 0:
                    break
                node = 2 * node + 1 if x[row, f] <= threshold[t, node] else 2 * node + 2
            out[row, t] = node
