"""Gradient-boosted classification trees that reproduce sklearn's, fast.

disentanglement_lib scores DCI and the downstream task with sklearn's
``GradientBoostingClassifier()`` (Friedman 2001, "Greedy Function Approximation"): 100
stages, learning rate 0.1, depth-3 regression trees. At stage m, with raw scores F and
p = softmax(F) (sigmoid for two classes), one tree per class k is grown on the residual
r_k = y_k - p_k by least squares (each split maximises the decrease of the residuals' sum
of squares), and each leaf L then takes the Newton step

    w_L = (K - 1) / K * sum_{i in L} r_ik / sum_{i in L} p_ik (1 - p_ik)

(no (K - 1) / K for two classes), so F_k += 0.1 w. A split's threshold is the midpoint
between the two training values it separates among the node's own samples. The importance
of a feature is the total decrease of the residuals' sum of squares at the splits on it,
over all trees, normalised to sum to 1.

sklearn grows those trees with an exact, single-threaded split search that sorts each
node's values again: 323 s for DCI on 10,000 points, five dSprites factors and ten codes on
two cores. Here they grow either with ``grower="exact"``
(:mod:`raystudy.metrics._exact_trees`: sklearn's own search, all trees of a stage in one
compiled pass per level; the rest of this docstring is about the other grower) or with
``grower="xgboost"``, with the same criterion: fed gradient -r and unit
hessian, with no L2 penalty and a minimum child weight of 1 (sklearn's min_samples_leaf),
xgboost's split gain is exactly the decrease of the residuals' sum of squares, so its
"loss_changes" are sklearn's importances. By default xgboost's exact method grows them
(``tree_method="exact"``: every threshold between distinct training values is a candidate,
as in sklearn, but on columns sorted once per fit instead of per node). Everything else is
done here in float64 as sklearn does it: the Newton leaf values (not xgboost's -G / H), the
raw scores and so the next stage's residuals, and the node-local thresholds, applied to the
float32-rounded inputs as sklearn's trees apply them.

What still differs from sklearn, and by how much:
- split candidates, only when ``max_bins`` is given: features are then binned at midpoints
  between consecutive distinct training values, all of them when there are at most
  ``max_bins`` distinct values (the search is still sklearn's), otherwise at
  ``max_bins - 1`` equal-count quantiles, searched with xgboost's histogram method. That is
  2-4x faster on 10,000 points, but coarser than sklearn: with 256 bins, the training
  accuracy of the DCI fits on 10,000 VAE codes fell by 0.047 (sklearn's exact search lets
  late trees isolate single training points, which only the training accuracy rewards),
  and D and C fell by 0.05 on 1,000 noisy synthetic codes;
- ties: sklearn visits features in a random order at every node and keeps the first best,
  so codes giving the same partition (duplicated dimensions) share the importance at
  random, evenly in expectation; xgboost always keeps the lowest column. Here stage m
  trains on a random column order and stage m + 1 on its reverse, so two tied codes win
  alternate stages and share about evenly (sklearn draws per node, we per stage). Different
  tie choices, in sklearn across random states as here, lead to different but equally good
  ensembles: scores then agree only up to that noise (~0.01 on small samples);
- xgboost sees the gradients in float32, and so can split a node whose residuals are all
  equal (a float-noise gain) where sklearn makes a leaf; both children then get the same
  Newton value, so predictions are unchanged, and the importance added is ~1e-9 of the total.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import xgboost as xgb
from numpy.typing import NDArray
from scipy.special import expit, softmax

from raystudy.metrics._exact_trees import apply_stage, grow_stage, sort_columns
from raystudy.metrics._xgb_trees import (
    apply_bins,
    apply_trees,
    make_bins,
    node_thresholds,
    stage_trees,
)

Grower = Literal["xgboost", "exact"]
GROWERS: tuple[str, ...] = ("xgboost", "exact")

#: Random column orders the stages cycle through, each followed by its reverse (see the
#: module docstring on ties).
NUM_ORDERS = 8
#: Gradients are multiplied by this so xgboost's minimum split gain (1e-6, a float32
#: rounding guard) sits far below any split sklearn's importances would register; the
#: leaf values xgboost derives from the gradients are never used.
GRADIENT_SCALE = 1e3


@dataclass(frozen=True)
class BoostedTrees:
    """A fitted classifier: importances and predicted labels on the train and eval sets."""

    importance: NDArray[np.float64]
    pred_train: NDArray[np.int64]
    pred_eval: list[NDArray[np.int64]]


def fit_boosted_trees(
    x_train: NDArray[np.float64],
    labels: NDArray[np.int64],
    x_eval: list[NDArray[np.float64]],
    *,
    num_classes: int,
    n_estimators: int = 100,
    learning_rate: float = 0.1,
    max_depth: int = 3,
    max_bins: int | None = None,
    seed: int = 0,
    n_jobs: int = 1,
    device: str = "cpu",
    grower: Grower = "xgboost",
) -> BoostedTrees:
    """sklearn's ``GradientBoostingClassifier`` (log loss, friedman_mse trees), on xgboost.

    Args:
        x_train: (N, D) features.
        labels: (N,) class indices in 0..num_classes-1, each class present at least once.
        x_eval: further (M, D) feature sets to predict.
        num_classes: number of classes, >= 2.
        n_estimators, learning_rate, max_depth: sklearn's defaults (100, 0.1, 3).
        max_bins: None (default): every threshold between distinct training values is a
            split candidate, as in sklearn. A number: at most that many bins per feature
            (see :func:`make_bins`), searched by histogram: faster, coarser.
        seed: draws the column orders; xgboost itself is deterministic here.
        n_jobs: xgboost threads.
        device: xgboost device, "cpu" or "cuda" (which has no exact method: there the
            exact search is a histogram with one bin per distinct value).
        grower: "xgboost" grows the trees with xgboost (above); "exact" with
            :mod:`raystudy.metrics._exact_trees` (sklearn's search itself, compiled; CPU,
            ``max_bins`` None only).

    Returns:
        Normalised importances (D,) and predicted class indices for train and each eval set.
    """
    if grower not in GROWERS:
        raise ValueError(f"unknown grower {grower!r}; choose one of {', '.join(GROWERS)}")
    # sklearn's trees see float32 inputs, so do ours.
    x32 = np.asarray(x_train, dtype=np.float32)
    eval32 = np.concatenate([np.asarray(x, dtype=np.float32) for x in x_eval] or [x32[:0]])
    n, num_features = x32.shape
    outputs = 1 if num_classes == 2 else num_classes
    rng = np.random.default_rng(seed)
    if grower == "exact":
        if max_bins is not None or device != "cpu":
            raise ValueError("the exact grower searches every threshold, on the CPU only")
        raw, raw_eval, gain = _boost_exact(
            x32, eval32, labels, num_classes, n_estimators, learning_rate, max_depth, rng
        )
        return _result(raw, raw_eval, gain, outputs, x_eval)
    # n bins hold every distinct value: the exact search's candidates.
    bins = make_bins(x32, n if max_bins is None else max_bins)
    binned = apply_bins(x32, bins)
    # Feature-major copies for the per-stage gathers below.
    index_type = np.int16 if bins.num_bins < 2**15 else np.int32
    binned_t = np.ascontiguousarray(binned.T, dtype=index_type)
    eval_t = np.ascontiguousarray(eval32.T)

    perms = _column_orders(rng, num_features)
    stage_perm = np.arange(n_estimators) % len(perms)
    train_sets = {
        i: xgb.DMatrix(binned[:, perms[i]], nthread=n_jobs) for i in set(stage_perm.tolist())
    }
    exact = max_bins is None and device == "cpu"
    params: dict[str, object] = {
        "tree_method": "exact" if exact else "hist",
        "max_depth": max_depth,
        "eta": 1.0,
        "reg_lambda": 0.0,
        "min_child_weight": 1.0,
        "base_score": 0.0,
        "nthread": n_jobs,
        "device": device,
        "seed": seed,
        "disable_default_eval_metric": 1,
    }
    if not exact:
        # Bins are the integers 0..len(edges): room for each keeps every threshold exact.
        params["max_bin"] = bins.num_bins + 1
    if outputs > 1:
        params["num_class"] = outputs
    booster = xgb.Booster(params, [train_sets[int(stage_perm[0])]])

    raw, raw_eval, onehot = _initial_scores(labels, num_classes, len(eval32))
    hess = np.ones((n, outputs), dtype=np.float32)
    slots, offsets = _node_ids(max_depth, outputs)
    gain = np.zeros(num_features)
    for m in range(n_estimators):
        p, residual = _residuals(raw, onehot, outputs)
        perm = perms[stage_perm[m]]
        train_set = train_sets[int(stage_perm[m])]
        booster.boost(train_set, m, grad=(-GRADIENT_SCALE * residual).astype(np.float32), hess=hess)
        stage = booster[m : m + 1]
        trees = stage_trees(stage, perm, outputs, slots, gain)
        leaves = stage.predict(train_set, pred_leaf=True).reshape(n, outputs).astype(np.int64)
        flat = leaves + offsets
        step = _newton_step(flat, residual, p, num_classes, slots)
        raw += learning_rate * step[flat]
        if len(eval32):
            leaves_t = np.ascontiguousarray(leaves.T, dtype=np.int32)
            thresholds = node_thresholds(trees, leaves_t, binned_t, bins)
            eval_leaves = apply_trees(trees, thresholds, eval_t, max_depth)
            raw_eval += learning_rate * step[(eval_leaves + offsets[:, None]).T]

    return _result(raw, raw_eval, gain, outputs, x_eval)


def _column_orders(rng: np.random.Generator, num_features: int) -> list[NDArray[np.int64]]:
    """NUM_ORDERS random column orders, each followed by its reverse (the module doc's ties)."""
    orders = [rng.permutation(num_features) for _ in range(NUM_ORDERS)]
    return [p for order in orders for p in (order, order[::-1].copy())]


def _node_ids(max_depth: int, outputs: int) -> tuple[int, NDArray[np.int64]]:
    """Node ids per tree and each tree's offset. Node ids of a depth-d tree are
    < 2^(d+1) - 1; one flat id per (tree, node) lets a single bincount do every tree's
    Newton step."""
    slots = 2 ** (max_depth + 1) - 1
    return slots, np.arange(outputs) * slots


def _residuals(
    raw: NDArray[np.float64], onehot: NDArray[np.bool_], outputs: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """p = sigmoid (one output) or softmax of the raw scores, and the residuals y - p."""
    p = expit(raw) if outputs == 1 else softmax(raw, axis=1)
    return p, onehot - p


def _initial_scores(
    labels: NDArray[np.int64], num_classes: int, num_eval: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """sklearn's start: raw scores at the log class priors (its DummyClassifier "prior"
    init) for the training and eval rows, and the one-hot targets (one column for two
    classes)."""
    outputs = 1 if num_classes == 2 else num_classes
    prior = np.bincount(labels, minlength=num_classes) / len(labels)
    init = np.log(prior[1:] / prior[:1]) if outputs == 1 else np.log(prior)
    onehot = labels[:, None] == (np.arange(outputs) + (outputs == 1))
    return np.tile(init, (len(labels), 1)), np.tile(init, (num_eval, 1)), onehot


def _newton_step(
    flat: NDArray[np.int64],
    residual: NDArray[np.float64],
    p: NDArray[np.float64],
    num_classes: int,
    slots: int,
) -> NDArray[np.float64]:
    """Every leaf's value w_L (see the module docstring), indexed by flat (tree, node) id.

    Args:
        flat: (N, trees) flat id tree * slots + leaf of every training row.
        residual: (N, trees) y - p.
        p: (N, trees) predicted probabilities.
        num_classes: K (the (K - 1) / K factor applies from three classes).
        slots: node ids per tree.
    """
    size = residual.shape[1] * slots
    numerator = np.bincount(flat.ravel(), residual.ravel(), size)
    denominator = np.bincount(flat.ravel(), (p * (1 - p)).ravel(), size)
    shrink = 1.0 if num_classes == 2 else (num_classes - 1) / num_classes
    step = np.zeros(size)
    np.divide(shrink * numerator, denominator, out=step, where=denominator != 0)
    return step


def _result(
    raw: NDArray[np.float64],
    raw_eval: NDArray[np.float64],
    gain: NDArray[np.float64],
    outputs: int,
    x_eval: list[NDArray[np.float64]],
) -> BoostedTrees:
    total = gain.sum()
    importance = gain / total if total > 0 else gain
    pred_train, pred_eval = _labels(raw, outputs), _labels(raw_eval, outputs)
    bounds = np.cumsum([0] + [len(x) for x in x_eval])
    return BoostedTrees(
        importance, pred_train, [pred_eval[a:b] for a, b in itertools.pairwise(bounds)]
    )


def _boost_exact(
    x32: NDArray[np.float32],
    eval32: NDArray[np.float32],
    labels: NDArray[np.int64],
    num_classes: int,
    n_estimators: int,
    learning_rate: float,
    max_depth: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The boosting loop of :func:`fit_boosted_trees` with the exact grower.

    Returns the raw scores of the training and eval rows and the summed split gains.
    """
    num_features = x32.shape[1]
    outputs = 1 if num_classes == 2 else num_classes
    x32 = np.ascontiguousarray(x32)
    columns = sort_columns(x32)
    # Per stage, one feature order (the tie rule; see the module docstring), as for xgboost.
    perms = _column_orders(rng, num_features)
    raw, raw_eval, onehot = _initial_scores(labels, num_classes, len(eval32))
    slots, offsets = _node_ids(max_depth, outputs)
    gain = np.zeros(num_features)
    for m in range(n_estimators):
        p, residual = _residuals(raw, onehot, outputs)
        stage = grow_stage(x32, columns, residual, perms[m % len(perms)], max_depth, gain)
        flat = stage.leaf + offsets
        step = _newton_step(flat, residual, p, num_classes, slots)
        raw += learning_rate * step[flat]
        if len(eval32):
            raw_eval += learning_rate * step[apply_stage(stage, eval32, max_depth) + offsets]
    return raw, raw_eval, gain


def _labels(raw: NDArray[np.float64], outputs: int) -> NDArray[np.int64]:
    return (raw[:, 0] > 0).astype(np.int64) if outputs == 1 else raw.argmax(axis=1)
