"""xgboost's trees read back as sklearn would have grown them (see
:mod:`raystudy.metrics._boosting`, whose xgboost grower uses this): features binned at
midpoints between training values, one stage's dumped trees as dense arrays with their split
gains, sklearn's node-local thresholds, and those trees applied to new points.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import xgboost as xgb
from numpy.typing import NDArray


@dataclass(frozen=True)
class Bins:
    """Per-feature binning of float32 training values.

    Attributes:
        edges: per feature, the ascending thresholds between bins.
        low: (D, B) smallest training value in each bin (padded with +inf).
        high: (D, B) largest training value in each bin (padded with -inf).
    """

    edges: list[NDArray[np.float64]]
    low: NDArray[np.float64]
    high: NDArray[np.float64]

    @property
    def num_bins(self) -> int:
        return self.low.shape[1]


def make_bins(x: NDArray[np.float32], max_bins: int) -> Bins:
    """Thresholds between consecutive distinct values of each column of ``x``.

    All of them when a column has at most ``max_bins`` distinct values; otherwise those
    nearest to ``max_bins - 1`` equal-count quantiles (never inside a run of equal values,
    where sklearn cannot split either).
    """
    edges, lows, highs = [], [], []
    for column in x.T.astype(np.float64):
        values, counts = np.unique(column, return_counts=True)
        cut = np.arange(values.size - 1)
        if values.size > max_bins:
            # Cut after the distinct value where each 1/max_bins of the mass is reached.
            targets = np.arange(1, max_bins) * (column.size / max_bins)
            cut = np.unique(np.searchsorted(np.cumsum(counts), targets))
            cut = cut[cut < values.size - 1]
        # sklearn's midpoint: half of each float32 value, summed in float64.
        edges.append(values[cut] / 2.0 + values[cut + 1] / 2.0)
        lows.append(values[np.concatenate([[0], cut + 1])])
        highs.append(values[np.concatenate([cut, [values.size - 1]])])
    width = max(len(low) for low in lows)
    low = np.full((x.shape[1], width), np.inf)
    high = np.full((x.shape[1], width), -np.inf)
    for j, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
        low[j, : lo.size], high[j, : hi.size] = lo, hi
    return Bins(edges, low, high)


def apply_bins(x: NDArray[np.float32], bins: Bins) -> NDArray[np.float32]:
    """Bin index of every value: the number of thresholds strictly below it.

    ``x <= threshold`` is the lower bin, as sklearn sends it left; the indices are small
    integers, exact in float32, and xgboost's cut between the integers b and b + 1 then
    splits exactly where the threshold does.
    """
    out = np.empty(x.shape, dtype=np.float32)
    for j, e in enumerate(bins.edges):
        out[:, j] = np.searchsorted(e, x[:, j].astype(np.float64), side="left")
    return out


@dataclass(frozen=True)
class StageTrees:
    """One stage's trees as dense (trees, slots) arrays; -1 marks missing children."""

    left: NDArray[np.int64]
    right: NDArray[np.int64]
    parent: NDArray[np.int64]
    feature: NDArray[np.int64]  # in the original column order
    cut: NDArray[np.int64]  # bins < cut go left (at the root: every bin below is occupied)


def stage_trees(
    stage: xgb.Booster,
    perm: NDArray[np.int64],
    outputs: int,
    slots: int,
    gain: NDArray[np.float64],
) -> StageTrees:
    """Parse one stage's trees; add their split gains to ``gain`` by original column."""
    model = json.loads(stage.save_raw("json"))["learner"]["gradient_booster"]["model"]
    shape = (outputs, slots)
    left, right, parent = np.full(shape, -1), np.full(shape, -1), np.full(shape, -1)
    feature, cut = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    for t, tree in enumerate(model["trees"]):
        size = len(tree["left_children"])
        left[t, :size] = tree["left_children"]
        right[t, :size] = tree["right_children"]
        parent[t, :size] = tree["parents"]
        internal = left[t, :size] != -1
        feature[t, :size] = np.where(internal, perm[np.asarray(tree["split_indices"])], 0)
        # hist splits at the integer cut, exact midway between two occupied bins: "bin <
        # condition" goes left in both, i.e. bin < ceil(condition).
        conditions = np.ceil(np.asarray(tree["split_conditions"], dtype=np.float64))
        cut[t, :size] = np.where(internal, conditions, 0)
        np.add.at(gain, feature[t, :size][internal], np.asarray(tree["loss_changes"])[internal])
    # xgboost marks the root's parent with a large sentinel; -1 here.
    parent[(parent < 0) | (parent >= slots)] = -1
    return StageTrees(left, right, parent, feature, cut)


def node_thresholds(
    trees: StageTrees, leaves_t: NDArray[np.int32], binned_t: NDArray[np.integer], bins: Bins
) -> NDArray[np.float64]:
    """sklearn's threshold of every split: the midpoint between the largest training value
    sent left and the smallest sent right, among the node's own samples.

    The highest and lowest bin (of the parent's feature) of every child node's samples are
    collected from the training samples' leaves, climbing towards the root; a split between
    bins b_L (left's highest) and b_R (right's lowest) then has threshold
    high[b_L] / 2 + low[b_R] / 2, exact when every distinct value has its own bin. The root
    holds every training point, so its b_L, b_R are the bins either side of its cut and
    need no search.

    Args:
        trees: the stage's trees.
        leaves_t: (trees, N) leaf of every training row.
        binned_t: (D, N) training bins, feature-major.
        bins: the binning.
    """
    outputs, slots = trees.left.shape
    num_bins = bins.num_bins
    num_rows = binned_t.shape[1]
    flat_bins = binned_t.ravel()
    # Per flat (tree, node) id: its parent's flat id (-1 at and above the root's children)
    # and where the parent's feature starts in flat_bins. Tiny tables, so each level below
    # is a few gathers over the (trees, rows) leaf array (int32: half the memory traffic).
    tree_base = np.repeat(np.arange(outputs, dtype=np.int32) * slots, slots)
    parent = trees.parent.ravel()
    up = np.where(parent > 0, tree_base + parent, -1).astype(np.int32)
    offset = np.where(up >= 0, trees.feature.ravel()[np.maximum(up, 0)] * num_rows, 0)
    offset = offset.astype(np.int32)
    rows = np.arange(num_rows, dtype=np.int32)[None, :]
    child = leaves_t + tree_base[::slots, None]
    # Per (tree, node): the highest and the lowest bin, on its parent's feature, of its
    # samples. O(trees x rows) per level whatever the number of bins.
    highest = np.full(outputs * slots, -1, dtype=np.int64)
    lowest = np.full(outputs * slots, num_bins, dtype=np.int64)
    while True:
        above = np.take(up, child)
        valid = above >= 0
        if not valid.any():
            break
        # ufunc.at is fast only when index and value types match the target's.
        node = child[valid].astype(np.intp)
        b = np.take(flat_bins, np.take(offset, child) + rows)[valid].astype(np.int64)
        np.maximum.at(highest, node, b)
        np.minimum.at(lowest, node, b)
        child = np.where(valid, above, child)
    base = tree_base[::slots, None]
    b_left = np.take(highest, base + np.maximum(trees.left, 0))
    b_right = np.take(lowest, base + np.maximum(trees.right, 0))
    # The root (node 0): the bins either side of its cut.
    b_left[:, 0], b_right[:, 0] = trees.cut[:, 0] - 1, trees.cut[:, 0]
    # Leaves get junk here (masked below); the clip keeps their lookups in range.
    b_left, b_right = np.clip(b_left, 0, num_bins - 1), np.clip(b_right, 0, num_bins - 1)
    high = bins.high[trees.feature, b_left]
    low = bins.low[trees.feature, b_right]
    return np.where(trees.left >= 0, high / 2.0 + low / 2.0, np.inf)


def apply_trees(
    trees: StageTrees, thresholds: NDArray[np.float64], x_t: NDArray[np.float32], max_depth: int
) -> NDArray[np.int32]:
    """Leaf of every row in every tree: ``x <= threshold`` goes left, as in sklearn.

    Args:
        trees: the stage's trees.
        thresholds: (trees, slots) split thresholds.
        x_t: (D, M) rows to place, feature-major.
        max_depth: depth of the trees.

    Returns:
        (trees, M) leaf ids.
    """
    outputs, slots = trees.left.shape
    num_rows = x_t.shape[1]
    flat_x = x_t.ravel()
    left = trees.left.ravel().astype(np.int32)
    right = trees.right.ravel().astype(np.int32)
    offset = (trees.feature.ravel() * num_rows).astype(np.int64)
    threshold = thresholds.ravel()
    tree_base = (np.arange(outputs, dtype=np.int32) * slots)[:, None]
    rows = np.arange(num_rows, dtype=np.int64)[None, :]
    node = np.broadcast_to(tree_base, (outputs, num_rows)).copy()
    for _ in range(max_depth):
        go_left = np.take(flat_x, np.take(offset, node) + rows) <= np.take(threshold, node)
        child = np.where(go_left, np.take(left, node), np.take(right, node))
        node = np.where(child >= 0, tree_base + child, node)
    return node - tree_base
