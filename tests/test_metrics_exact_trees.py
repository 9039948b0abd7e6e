"""The exact tree grower against sklearn's own regression trees, node by node.

`raystudy.metrics._exact_trees` claims to grow, for every column of residuals, the tree
sklearn's ``DecisionTreeRegressor(criterion="squared_error", max_depth=3)`` grows (the trees
inside ``GradientBoostingClassifier``). Without ties between features these must be the
same trees: same split feature and threshold at every node, same leaf for every row, same
impurity decrease per split. Where several features give the best split of a node (e.g. any
feature separates a node of two rows) sklearn picks one at random and we the first in the
stage's order: the test checks such a node is a true tie.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from raystudy.metrics._boosting import fit_boosted_trees
from raystudy.metrics._exact_trees import apply_stage, grow_stage, sort_columns

DEPTH = 3


def sklearn_heap(tree: DecisionTreeRegressor) -> dict[int, tuple[int, float]]:
    """sklearn's splits keyed by heap position (root 0, children 2a + 1 and 2a + 2)."""
    t = tree.tree_
    out: dict[int, tuple[int, float]] = {}

    def walk(node: int, heap: int) -> None:
        if t.children_left[node] == -1:
            return
        out[heap] = (int(t.feature[node]), float(t.threshold[node]))
        walk(t.children_left[node], 2 * heap + 1)
        walk(t.children_right[node], 2 * heap + 2)

    walk(0, 0)
    return out


def grown(x: np.ndarray, residual: np.ndarray, order: np.ndarray | None = None):
    gain = np.zeros(x.shape[1])
    order = np.arange(x.shape[1]) if order is None else order
    stage = grow_stage(x, sort_columns(x), residual, order, DEPTH, gain)
    return stage, gain


def inputs(kind: str, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "continuous":
        return rng.normal(size=(n, d)).astype(np.float32)
    if kind == "discrete":  # many equal values: splits only between distinct ones
        return rng.integers(0, 7, size=(n, d)).astype(np.float32)
    # values 5e-8 apart, which sklearn (FEATURE_THRESHOLD = 1e-7) never separates
    base = rng.integers(0, 40, size=(n, d)).astype(np.float64)
    return (base + 5e-8 * rng.integers(0, 2, size=(n, d))).astype(np.float32)


def sse_decrease(r: np.ndarray, left: np.ndarray) -> float:
    def sse(v: np.ndarray) -> float:
        return float(((v - v.mean()) ** 2).sum()) if v.size else 0.0

    return sse(r) - sse(r[left]) - sse(r[~left])


@pytest.mark.parametrize("kind", ["continuous", "discrete", "near_ties"])
def test_each_tree_is_sklearns_tree(kind):
    rng = np.random.default_rng(3)
    x = inputs(kind, 400, 5, rng)
    residual = rng.normal(size=(400, 4)) + x[:, :1] * np.array([2.0, -1.0, 0.0, 0.5])
    stage, _ = grown(x, residual)
    compared = 0
    for t in range(residual.shape[1]):
        ref = DecisionTreeRegressor(criterion="squared_error", max_depth=DEPTH, random_state=0)
        ref.fit(x, residual[:, t])
        splits = sklearn_heap(ref)
        # Rows of each of our nodes, top-down.
        members = {0: np.ones(len(x), dtype=bool)}
        for node in range(2**DEPTH - 1):
            f, cut = int(stage.feature[t, node]), float(stage.threshold[t, node])
            if node not in members or f < 0:
                continue
            left = x[:, f] <= cut
            members[2 * node + 1] = members[node] & left
            members[2 * node + 2] = members[node] & ~left
        diverged: set[int] = set()  # nodes below a tie broken another way
        for node in sorted(splits):
            if (node - 1) // 2 in diverged and node > 0:
                diverged.add(node)
                continue
            feature, threshold = splits[node]
            assert stage.feature[t, node] >= 0, (t, node)
            if stage.feature[t, node] != feature:
                rows = members[node]
                ours_left = x[rows, stage.feature[t, node]] <= stage.threshold[t, node]
                theirs_left = x[rows, feature] <= threshold
                r = residual[rows, t]
                assert sse_decrease(r, ours_left) == pytest.approx(
                    sse_decrease(r, theirs_left), rel=1e-9
                ), (t, node)
                if not np.array_equal(ours_left, theirs_left):
                    diverged.add(node)
                continue
            assert stage.threshold[t, node] == pytest.approx(threshold, rel=0, abs=1e-12)
            compared += 1
        if not diverged:
            # No split sklearn lacks, and the same leaf value for every training row.
            assert set(np.flatnonzero(stage.feature[t] >= 0)) == set(splits)
            ours_pred = np.zeros(len(x))
            for leaf in np.unique(stage.leaf[:, t]):
                rows = stage.leaf[:, t] == leaf
                ours_pred[rows] = residual[rows, t].mean()
            np.testing.assert_allclose(ours_pred, ref.predict(x), atol=1e-12)
    assert compared >= 20  # the ties are the exception


def test_gains_are_sklearns_impurity_decreases():
    rng = np.random.default_rng(4)
    x = inputs("continuous", 300, 4, rng)
    residual = rng.normal(size=(300, 3)) + np.stack([x[:, 1], x[:, 2] ** 2, -x[:, 0]], 1)
    same_features = 0
    for t in range(3):
        stage, gain = grown(x, residual[:, t : t + 1])
        ref = DecisionTreeRegressor(criterion="squared_error", max_depth=DEPTH, random_state=0)
        ref.fit(x, residual[:, t])
        # Unnormalised importances are impurity decreases divided by the root's samples.
        expected = ref.tree_.compute_feature_importances(normalize=False) * len(x)
        assert gain.sum() == pytest.approx(expected.sum(), rel=1e-9)
        ours = {int(a): int(stage.feature[0, a]) for a in np.flatnonzero(stage.feature[0] >= 0)}
        if ours == {a: f for a, (f, _) in sklearn_heap(ref).items()}:
            # No tie broken another way: each split's decrease lands on the same feature.
            np.testing.assert_allclose(gain, expected, rtol=1e-9, atol=1e-9)
            same_features += 1
    assert same_features >= 2


def test_unseen_rows_follow_the_thresholds_as_sklearn_does():
    rng = np.random.default_rng(5)
    x = inputs("continuous", 300, 3, rng)
    residual = rng.normal(size=(300, 4)) + np.concatenate([x[:, :2], x[:, :2]], axis=1)
    stage, _ = grown(x, residual)
    fresh = rng.normal(size=(200, 3)).astype(np.float32)
    leaves = apply_stage(stage, fresh, DEPTH)
    checked = 0
    for t in range(residual.shape[1]):
        ref = DecisionTreeRegressor(criterion="squared_error", max_depth=DEPTH, random_state=0)
        ref.fit(x, residual[:, t])
        ours = {int(a): int(stage.feature[t, a]) for a in np.flatnonzero(stage.feature[t] >= 0)}
        if ours != {a: f for a, (f, _) in sklearn_heap(ref).items()}:
            continue  # a tie sklearn broke another way: unseen rows may then go elsewhere
        predicted = np.zeros(len(fresh))
        for leaf in np.unique(stage.leaf[:, t]):
            predicted[leaves[:, t] == leaf] = residual[stage.leaf[:, t] == leaf, t].mean()
        np.testing.assert_allclose(predicted, ref.predict(fresh), atol=1e-12)
        checked += 1
    assert checked >= 2


def test_ties_between_features_go_to_the_first_in_the_stage_order():
    rng = np.random.default_rng(6)
    column = rng.normal(size=200).astype(np.float32)
    x = np.stack([column, column], axis=1)  # two features giving the same partitions
    residual = (column[:, None] > 0.3) + 0.1 * rng.normal(size=(200, 1))
    forward, forward_gain = grown(x, residual, np.array([0, 1]))
    backward, backward_gain = grown(x, residual, np.array([1, 0]))
    assert forward.feature[0, 0] == 0 and backward.feature[0, 0] == 1
    assert forward_gain[1] == 0 and backward_gain[0] == 0
    assert forward_gain[0] == pytest.approx(backward_gain[1])


def test_constant_residuals_make_a_leaf_and_one_row_nodes_stop():
    x = np.arange(10, dtype=np.float32)[:, None]
    stage, gain = grown(x, np.ones((10, 1)))
    assert (stage.feature == -1).all() and (stage.leaf == 0).all() and gain.sum() == 0
    stage, _ = grown(x[:2], np.array([[0.0], [1.0]]))
    # Split once into two one-row leaves, which cannot split further.
    assert stage.feature[0, 0] == 0 and (stage.feature[0, 1:] == -1).all()


def test_exact_and_xgboost_growers_give_the_same_classifier():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 4, size=500)
    x = labels[:, None] + rng.normal(scale=1.5, size=(500, 3))
    held = rng.normal(size=(100, 3)) + 1.5
    exact = fit_boosted_trees(x, labels, [held], num_classes=4, n_estimators=20, grower="exact")
    xgb = fit_boosted_trees(x, labels, [held], num_classes=4, n_estimators=20, grower="xgboost")
    # Different float paths (xgboost sees float32 gradients) may break a near-tie apart late,
    # hence agreement on nearly every row rather than all.
    assert np.mean(exact.pred_train == xgb.pred_train) > 0.98
    assert np.mean(exact.pred_eval[0] == xgb.pred_eval[0]) > 0.97
    np.testing.assert_allclose(exact.importance, xgb.importance, atol=0.01)


def test_exact_grower_refuses_histogram_and_gpu_options():
    x, labels = np.zeros((4, 1)), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="exact grower"):
        fit_boosted_trees(x, labels, [], num_classes=2, grower="exact", max_bins=16)
    with pytest.raises(ValueError, match="unknown grower"):
        fit_boosted_trees(x, labels, [], num_classes=2, grower="numpy")
