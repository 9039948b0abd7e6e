"""Inputs the reference never meets give defined values and a MetricWarning, not NaN or an
exception: a constant code dimension, NaN codes, a factor with one value, fewer samples than
bins, and the public API's own argument checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from raystudy.metrics import INTERVENTION_METRICS, METRICS, MetricWarning, evaluate
from raystudy.metrics.registry import metric_outputs

N_TRAIN, N_TEST = 120, 60
#: Keeps the tree-based metrics cheap; every other option is the default.
OPTIONS = {"gbt10000": {"train_sizes": (10, 100)}}


def base_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, 3, 180), rng.integers(0, 4, 180)], axis=1)
    codes = np.concatenate(
        [factors + 0.1 * rng.normal(size=factors.shape), rng.normal(size=(180, 1))], 1
    )
    return codes, factors


def run_all(codes: np.ndarray, factors: np.ndarray, **kwargs) -> dict[str, dict[str, float]]:
    kwargs = {"num_train": N_TRAIN, "num_test": N_TEST, **kwargs}
    return {
        name: evaluate(name, codes, factors, **OPTIONS.get(name, {}), **kwargs)
        for name in METRICS.names()
    }


def assert_defined(results: dict[str, dict[str, float]]) -> None:
    for name, scores in results.items():
        for key, value in scores.items():
            assert math.isfinite(value) and 0.0 <= value <= 1.0, (name, key, value)


def test_a_constant_code_dimension_is_scored_as_uninformative():
    codes, factors = base_data()
    codes[:, 2] = 7.0
    with pytest.warns(MetricWarning, match="constant"):
        results = run_all(codes, factors)
    assert_defined(results)
    # The informative dimensions are untouched: MIG is that of the codes without it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = evaluate("mig", codes[:, :2], factors, num_train=N_TRAIN, num_test=N_TEST)
    assert results["mig"]["mig"] == pytest.approx(alone["mig"])


def test_nan_codes_make_the_dimension_dead_instead_of_failing():
    codes, factors = base_data()
    codes[5, 2] = np.nan
    codes[150, 2] = np.inf
    with pytest.warns(MetricWarning, match="NaN or inf"):
        results = run_all(codes, factors)
    assert_defined(results)
    dead = codes.copy()
    dead[:, 2] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert results["mig"] == evaluate("mig", dead, factors, num_train=N_TRAIN, num_test=N_TEST)
        assert results["sap"] == evaluate("sap", dead, factors, num_train=N_TRAIN, num_test=N_TEST)


def test_all_nan_codes_score_as_no_information():
    codes, factors = base_data()
    codes[:] = np.nan
    with pytest.warns(MetricWarning):
        results = run_all(codes, factors)
    assert_defined(results)
    assert results["mig"]["mig"] == 0.0
    assert results["dci"]["dci_d"] == 0.0 and results["dci"]["dci_c"] == 0.0
    assert results["sap"]["sap"] == 0.0
    assert results["modularity"] == {"modularity": 0.0, "explicitness": 0.5}


def test_a_single_valued_factor_is_left_out():
    codes, factors = base_data()
    with_constant = np.concatenate([factors, np.full((len(factors), 1), 2)], axis=1)
    with pytest.warns(MetricWarning, match="single value"):
        results = run_all(codes, with_constant)
    assert_defined(results)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = run_all(codes, factors)
    for name in ("mig", "dci", "sap", "modularity", "gbt10000"):
        assert results[name] == pytest.approx(plain[name]), name


def test_only_single_valued_factors_give_the_no_information_values():
    codes, _ = base_data()
    factors = np.zeros((len(codes), 2), dtype=int)
    with pytest.warns(MetricWarning, match="single value"):
        results = run_all(codes, factors)
    assert_defined(results)
    assert results["mig"]["mig"] == 0.0
    assert results["dci"] == {"dci_d": 0.0, "dci_c": 0.0, "dci_i": 1.0, "dci_i_train": 1.0}
    assert results["sap"]["sap"] == 0.0


def test_fewer_samples_than_bins_warns_but_scores():
    codes, factors = base_data()
    with pytest.warns(MetricWarning, match="bins"):
        scores = evaluate("mig", codes, factors, num_train=12, num_test=0)
    assert 0.0 <= scores["mig"] <= 1.0
    with pytest.warns(MetricWarning, match="bins"):
        scores = evaluate("modularity", codes, factors, num_train=12, num_test=8)
    assert all(0.0 <= v <= 1.0 for v in scores.values())


def test_a_factor_with_one_value_in_a_tiny_train_split_still_scores():
    codes, factors = base_data()
    factors = factors.copy()
    factors[:10, 0] = 0  # gbt10 sees a single value of factor 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = evaluate("gbt10000", codes, factors, train_sizes=(10,), num_train=100, num_test=50)
    assert 0.0 <= scores["gbt10_acc"] <= 1.0


def test_training_sizes_beyond_the_training_set_are_nan_with_a_warning():
    codes, factors = base_data()
    with pytest.warns(MetricWarning, match="gbt10000_acc needs 10000"):
        scores = evaluate(
            "gbt10000", codes, factors, num_train=N_TRAIN, num_test=N_TEST, train_sizes=(10, 10000)
        )
    assert math.isnan(scores["gbt10000_acc"]) and 0.0 <= scores["gbt10_acc"] <= 1.0


# --- the public API --------------------------------------------------------------------


def test_evaluate_splits_rows_in_order():
    codes, factors = base_data()
    from raystudy.metrics import dci, mig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert evaluate("mig", codes, factors, num_train=100, num_test=50) == mig(
            codes[:100], factors[:100]
        )
        assert evaluate("dci", codes, factors, num_train=100, num_test=50, seed=3) == dci(
            codes[:100], factors[:100], codes[100:150], factors[100:150], seed=3
        )


def test_evaluate_needs_enough_rows_except_for_train_only_metrics():
    codes, factors = base_data()
    with pytest.raises(ValueError, match="num_train=150 rows"):
        evaluate("dci", codes, factors, num_train=150, num_test=50)
    # MIG uses the training rows alone.
    assert 0.0 <= evaluate("mig", codes, factors, num_train=150, num_test=50)["mig"] <= 1.0


def test_evaluate_rejects_bad_inputs_with_clear_messages():
    codes, factors = base_data()
    with pytest.raises(ValueError, match="integer"):
        evaluate("mig", codes, factors.astype(float), num_train=100)
    with pytest.raises(ValueError, match="rows"):
        evaluate("mig", codes[:50], factors, num_train=40)
    with pytest.raises(ValueError, match=r"dci.*gbt10000.*mig.*modularity.*sap"):
        evaluate("no_such_metric", codes, factors)
    with pytest.raises(ValueError, match="evaluate_intervention"):
        evaluate("beta_vae", codes, factors)


def test_registries_list_every_metric_of_the_issue():
    assert METRICS.names() == [
        "dci",
        "dci_lasso",
        "dci_lasso_paper",
        "gbt10000",
        "mig",
        "modularity",
        "sap",
    ]
    assert INTERVENTION_METRICS.names() == ["beta_vae", "factor_vae"]


def test_keys_are_the_documented_ones():
    codes, factors = base_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run_all(codes, factors)
    assert set(results["mig"]) == {"mig"}
    assert set(results["dci"]) == {"dci_d", "dci_c", "dci_i", "dci_i_train"}
    assert set(results["sap"]) == {"sap"}
    assert set(results["modularity"]) == {"modularity", "explicitness"}
    assert set(results["gbt10000"]) == {"gbt10_acc", "gbt100_acc"}
    with pytest.warns(MetricWarning, match="needs 1000"):
        default = evaluate("gbt10000", codes, factors, num_train=N_TRAIN, num_test=N_TEST)
    assert set(default) == {"gbt10_acc", "gbt100_acc", "gbt1000_acc", "gbt10000_acc"}
    # What a spec may name (search.metric) is what the metrics declare: the same keys.
    assert set(default) == set(metric_outputs("gbt10000"))
    for name in ("mig", "dci", "sap", "modularity"):
        assert set(results[name]) == set(metric_outputs(name)), name
