"""Search methods: random draws (fixed, reproducible) and Optuna-guided studies through Tune."""

from __future__ import annotations

from pathlib import Path

import mlflow
import optuna
import pytest
from tiny import LIGHT, SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.spec import SpecError
from raystudy.spec.search_space import random_points
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo
from raystudy.tags import TRIAL_RUNS

CONDITIONAL = (
    "search.space={model: [{objective: beta_vae, beta: {loguniform: [1, 16]}},"
    " {objective: ada_gvae, latent_dim: {int: [3, 6]}}],"
    " train: {input_noise: {choice: [false, true]}}}"
)


def test_random_points_are_reproducible_and_conditional() -> None:
    spec = load_spec(
        SMOKE, ["grid={}", "search.method=random", "search.num_samples=40", CONDITIONAL]
    )
    points = spec.points()
    assert points == spec.points() and len(points) == 40
    objectives = {p["model"]["objective"] for p in points}
    assert objectives == {"beta_vae", "ada_gvae"}
    for p in points:
        if p["model"]["objective"] == "beta_vae":
            assert 1 <= p["model"]["beta"] <= 16 and "latent_dim" not in p["model"]
        else:
            assert 3 <= p["model"]["latent_dim"] <= 6 and "beta" not in p["model"]
    trials = spec.trials()
    assert {t.train.input_noise for t in trials} == {False, True}
    other = random_points(spec.search.space, 40, seed=1)
    assert other != points


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        (["search.method=optuna", CONDITIONAL, "grid={}"], "search", ["needs `metric` and `mode`"]),
        (["search.method=grid", CONDITIONAL], "search", ["a grid goes in `grid`"]),
        (["search.method=random", CONDITIONAL], "grid", ["leave grid empty"]),
        (
            [
                "grid={}",
                "search.method=random",
                "search.space={model: {beta: {loguniform: [0, 2]}}}",
            ],
            "search",
            ["bounds must be positive"],
        ),
        (
            ["grid={}", "search.method=random", "search.space={model: {betaa: {uniform: [1, 2]}}}"],
            "search.space.model.betaa",
            ["did you mean 'beta'"],
        ),
        (
            [
                "grid={}",
                "search.method=random",
                "search.space={model: {beta: {uniform: [-3, -1]}}}",
            ],
            "search.space.model.beta",
            ["model.beta", "greater than or equal to 0"],
        ),
    ],
)
def test_search_spec_errors(overrides: list[str], field: str, words: list[str]) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(SMOKE, overrides)
    message = str(info.value)
    assert f"{SMOKE}: {field}" in message, message
    for word in words:
        assert word in message, message


def trial_runs(info: StudyInfo) -> list:
    client = mlflow.MlflowClient(info.tracking_uri)
    return client.search_runs([info.experiment_id], TRIAL_RUNS)


@pytest.mark.heavy  # an Optuna search through Tune: the fault tier
def test_optuna_study_persists_trials_with_the_trials_metric(ray_local, tmp_path: Path) -> None:
    spec = load_spec(
        SMOKE,
        tiny(
            "tpe",
            LIGHT,
            "grid={}",
            "search.method=optuna",
            "search.num_samples=3",
            CONDITIONAL,
            "search.metric=dis/mig",
            "search.mode=max",
            "search.asha={metric: train/loss, mode: min, grace_period: 1, max_t: 3}",
        ),
    )
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.info.num_tune_trials == 3
    runs = trial_runs(outcome.info)
    assert len(runs) == 3
    study = optuna.load_study(
        study_name="tpe", storage=f"sqlite:///{tmp_path / 'tpe' / 'optuna.db'}"
    )
    states = [t.state for t in study.trials]
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    # ASHA may stop trials on train/loss before they are evaluated: Optuna records those as
    # pruned, MLflow as killed; the rest complete with the metric MLflow recorded.
    assert len(states) == 3 and complete
    assert set(states) <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert len(finished) == len(complete)
    assert {r.info.status for r in runs} <= {"FINISHED", "KILLED"}
    assert sorted(t.value for t in complete) == pytest.approx(
        sorted(r.data.metrics["dis/mig"] for r in finished)
    )
    for t in complete:  # conditional: beta only with beta_vae
        assert ("model[objective=beta_vae].beta" in t.params) == (
            t.params["model"] == "objective=beta_vae"
        )


# heavy: the suite's 10-minute budget (docs/performance/test-suite.md).
@pytest.mark.heavy
def test_multi_objective_nsga2(ray_local, tmp_path: Path) -> None:
    spec = load_spec(
        SMOKE,
        tiny(
            "nsga",
            LIGHT,
            "grid={}",
            "search.method=optuna",
            "search.num_samples=2",
            "search.sampler=nsga2",
            "search.space={model: {beta: {uniform: [1, 8]}}}",
            "search.metric=[dis/mig, transfer/ood2_a/gbt/mae]",
            "search.mode=[max, min]",
        ),
    )
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok, outcome.states
    study = optuna.load_study(
        study_name="nsga", storage=f"sqlite:///{tmp_path / 'nsga' / 'optuna.db'}"
    )
    assert study.directions == [
        optuna.study.StudyDirection.MAXIMIZE,
        optuna.study.StudyDirection.MINIMIZE,
    ]
    values = sorted(tuple(t.values) for t in study.trials if t.values)
    runs = trial_runs(outcome.info)
    expected = sorted(
        (r.data.metrics["dis/mig"], r.data.metrics["transfer/ood2_a/gbt/mae"]) for r in runs
    )
    assert values == [pytest.approx(v) for v in expected]
