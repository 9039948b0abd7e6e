"""The batched torch MLP probe is scikit-learn's MLPRegressor per factor, step for step; where
scoring runs (`evaluation.device`) and which implementation computes `mlp` there."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.neural_network import MLPRegressor

from raystudy.metrics.probes import get_probe, probe_implementation
from raystudy.metrics.probes.gbt import GBTProbe
from raystudy.metrics.probes.mlp import MLPProbe, SklearnMLPProbe, mlp_implementation
from raystudy.metrics.probes.mlp_torch import TorchMLPProbe
from raystudy.probe_data import scoring_device
from raystudy.spec import StudySpec


def codes_of(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(codes, targets): a fixed nonlinear mix of k factors in [0, 1] into 8 dims, plus noise."""
    rng = np.random.default_rng(seed)
    targets = rng.uniform(size=(n, k))
    mix = np.random.default_rng(100).normal(size=(k, 8))
    return np.tanh(targets @ mix) + 0.05 * rng.normal(size=(n, 8)), targets


def sklearn_per_factor(x: np.ndarray, y: np.ndarray, seed: int, **options: object) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return [
            MLPRegressor(
                hidden_layer_sizes=(256, 256), early_stopping=True, random_state=seed, **options
            ).fit(x, y[:, k])
            for k in range(y.shape[1])
        ]


def test_in_float64_it_is_sklearn_to_rounding_stops_included():
    # Same start, split, shuffles, loss, Adam and stopping rule: only the order of sums in a
    # matrix product differs, so predictions agree to ~1e-15 and every network stops at the
    # epoch its scikit-learn twin stops at (each stops on its own).
    x, y = codes_of(600, 3, seed=1)
    x_test, _ = codes_of(200, 3, seed=2)
    reference = sklearn_per_factor(x, y, seed=3)
    probe = TorchMLPProbe(seed=3, dtype="float64").fit(x, y)
    pred = probe.predict(x_test)
    stops = [m.n_iter_ for m in reference]
    assert list(probe.n_iter_) == stops
    assert len(set(stops)) > 1, "the networks should stop at different epochs here"
    for k, model in enumerate(reference):
        np.testing.assert_allclose(pred[:, k], model.predict(x_test), rtol=0, atol=1e-9)


def test_a_factor_constant_in_training_is_fitted_as_sklearn_fits_it():
    # OOD1-A trains on one hue: that target is constant, its validation R2 is scikit-learn's
    # convention (0 unless predicted exactly), which decides when it stops.
    x, y = codes_of(400, 2, seed=4)
    y[:, 1] = 0.25
    reference = sklearn_per_factor(x, y, seed=0, max_iter=40)
    probe = TorchMLPProbe(seed=0, dtype="float64", max_iter=40).fit(x, y)
    assert list(probe.n_iter_) == [m.n_iter_ for m in reference]
    np.testing.assert_allclose(probe.predict(x)[:, 1], reference[1].predict(x), atol=1e-9)


def test_in_float32_it_scores_as_sklearn_does_and_names_itself():
    x, y = codes_of(800, 3, seed=5)
    x_test, y_test = codes_of(300, 3, seed=6)
    reference = np.stack([m.predict(x_test) for m in sklearn_per_factor(x, y, seed=0)], 1)
    pred = get_probe("mlp_torch", seed=0).fit(x, y).predict(x_test)
    assert pred.dtype == np.float64 and pred.shape == (300, 3)
    for k in range(3):
        assert (
            abs(r2_score(y_test[:, k], pred[:, k]) - r2_score(y_test[:, k], reference[:, k])) < 0.01
        )
    assert probe_implementation("mlp_torch", "cuda:0") == "torch batched float32 on cuda:0"


def test_threads_and_matmul_precision_are_the_probes_and_given_back():
    before = torch.get_num_threads()
    torch.set_float32_matmul_precision("high")  # as a training that allowed TF32 leaves it
    try:
        x, y = codes_of(100, 1, seed=7)
        TorchMLPProbe(seed=0, n_jobs=1, max_iter=2).fit(x, y).predict(x)
        assert torch.get_num_threads() == before
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


def test_too_few_points_for_early_stopping_is_a_clear_error():
    x, y = codes_of(10, 1, seed=8)
    with pytest.raises(ValueError, match="validation split"):
        TorchMLPProbe(seed=0).fit(x, y)


def test_mlp_is_the_batched_twin_on_a_cpu_and_on_a_gpu():
    # Measured equivalent and faster on a CPU too (docs/performance/scoring.md): one algorithm
    # wherever a trial scores; scikit-learn's stays available by name.
    assert mlp_implementation("cpu") == mlp_implementation("cuda:1") == "mlp_torch"
    assert probe_implementation("mlp", "cpu") == TorchMLPProbe.implementation("cpu")
    assert probe_implementation("mlp", "cuda") == TorchMLPProbe.implementation("cuda")
    assert probe_implementation("mlp_sklearn", "cuda") == SklearnMLPProbe.implementation()
    x, y = codes_of(300, 2, seed=9)
    fitted = MLPProbe(seed=0, device="cpu").fit(x, y)
    assert isinstance(fitted.probe_, TorchMLPProbe)
    np.testing.assert_array_equal(
        fitted.predict(x), get_probe("mlp_torch", seed=0).fit(x, y).predict(x)
    )


def test_the_gbt_probe_takes_a_device_and_predicts_on_the_host():
    # Without a GPU xgboost falls back to its CPU (with its own warning): the GPU branch, which
    # moves the fitted trees back to the host for predicting, runs all the same.
    x, y = codes_of(300, 2, seed=10)
    on_cpu = GBTProbe(seed=0, n_estimators=20).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asked_gpu = GBTProbe(seed=0, n_estimators=20, device="cuda").fit(x, y)
    assert asked_gpu.model_.get_params()["device"] == "cpu"
    np.testing.assert_array_equal(asked_gpu.predict(x), on_cpu.predict(x))
    assert probe_implementation("gbt", "cuda") == "xgboost hist on cuda"


def test_a_probe_that_takes_no_device_runs_where_it_always_did():
    assert "device" not in vars(get_probe("linear", device="cuda"))
    assert probe_implementation("linear", "cuda").endswith("on cpu")


def test_the_scoring_device_follows_the_setting():
    cpu = torch.device("cpu")
    assert scoring_device("auto", cpu) == "cpu"
    assert scoring_device("cpu", torch.device("cuda", 0)) == "cpu"
    assert scoring_device("auto", torch.device("cuda", 0)) == "cuda:0"
    with pytest.raises(
        RuntimeError, match=r"evaluation\.device is cuda but this trial holds no GPU"
    ):
        scoring_device("cuda", cpu)


def test_a_spec_scoring_on_cuda_without_gpus_is_refused_before_it_runs():
    base = {"name": "s", "evaluation": {"device": "cuda"}}
    with pytest.raises(ValueError, match=r"evaluation\.device: cuda .* resources\.gpu is 0"):
        StudySpec.model_validate(base)
    with pytest.raises(ValueError, match=r"resources\.gpu is 0"):
        StudySpec.model_validate({"name": "s", "grid": {"evaluation": {"device": ["cpu", "cuda"]}}})
    assert (
        StudySpec.model_validate({**base, "resources": {"gpu": 0.25}}).evaluation.device == "cuda"
    )
    with pytest.raises(ValueError, match="auto"):
        StudySpec.model_validate({"name": "s", "evaluation": {"device": "tpu"}})
