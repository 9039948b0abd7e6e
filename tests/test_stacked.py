"""seeds_per_trial: S models trained as one batched model equal S lone runs, per seed."""

from __future__ import annotations

import math

import mlflow
import numpy as np
import pytest
import torch
import yaml
from reporters import StopAfter
from tiny import LIGHT, SMOKE, tiny

from raystudy.analysis.core.columns import RUN_NAME
from raystudy.analysis.core.tune_results import load_tune_results
from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.keys import system_key
from raystudy.models import VAE, build
from raystudy.spec import ModelConfig, SpecError, TrainConfig
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyError
from raystudy.study.records import models_of, run_records
from raystudy.tags import DEVICE_TAG, STACK_TAG, TRIAL_ID_TAG, TRIAL_RUNS, column, version_tag
from raystudy.tracking.sync import sync_run
from raystudy.training.loop import TrainingDiverged, train
from raystudy.training.stacked import train_stacked
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter
from raystudy.trials.stacked import run_seed_stack
from raystudy.tune.points import stack_labels
from raystudy.tune.state import TuneTrial

CPU = torch.device("cpu")
SEEDS = [3, 11]


@pytest.fixture(scope="module")
def data():
    dataset = get_dataset("color_dsprites")
    return dataset, get_split("iid", dataset)


def fresh(config: ModelConfig, dataset, seed: int):
    torch.manual_seed(seed)  # as a trial builds its model: the seed fixes the initial weights
    return build(config, dataset.channels, dataset.resolution, dataset.factors.num_factors)


def max_difference(a: VAE, b: VAE) -> float:
    return max(
        (x - y).abs().max().item()
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


# Parameters are compared absolutely. In "vmap" batching, grouped and single convolutions sum
# in different orders (~1e-7 apart); where a gradient is itself at that noise level, Adam's
# normalisation turns the noise into up to one step (lr = 1e-4) of difference: AdaGVAE's
# shared-dimension averaging has many such elements. "loop" runs each model's own ops. The
# loss histories must agree in every case.
@pytest.mark.parametrize(
    ("objective", "options", "train_options", "batching", "tolerance"),
    [
        ("beta_vae", {"beta": 4.0}, {"input_noise": True, "grad_clip": 1.0}, "loop", 1e-6),
        # One step (lr 1e-4): on an AMD EPYC's kernels one weight moved 8.4e-5 (2026-12-07),
        # under 1e-5 on the CPUs before it; the loss histories agree all the same.
        ("beta_vae", {"beta": 4.0}, {"input_noise": True, "lr_milestones": [2]}, "vmap", 1e-4),
        ("ada_gvae", {"k": "random"}, {"kl_warmup_steps": 3}, "loop", 1e-6),
        ("ada_gvae", {"k": "random"}, {"kl_warmup_steps": 3}, "vmap", 1e-3),
        ("beta_tcvae", {"beta": 6.0}, {}, "vmap", 1e-5),
        ("gt_decoder", {}, {}, "vmap", 1e-5),
        # WAE draws its prior samples through the replayed noise too. LieGroupVAE's basis is
        # a model parameter, stacked like the others (matrix_exp under vmap). ~17 s each on
        # a loaded 2-core box: the last two run with the heavy tests.
        ("wae", {}, {}, "vmap", 1e-5),
        # Triples: three renders a row, the composition layer a model parameter.
        ("composition", {}, {"input_noise": True}, "loop", 1e-6),
        pytest.param(
            "cascade_vae", {"release_every": 1}, {}, "vmap", 1e-5, marks=pytest.mark.heavy
        ),
        pytest.param(
            "lie_group_vae", {"group_matrix_dim": 3}, {}, "vmap", 1e-5, marks=pytest.mark.heavy
        ),
        # CascadeVAE's discrete code from step 2: its matching runs on the host, model by model.
        ("cascade_vae", {"release_every": 1, "discrete_from": 2}, {}, "auto", 1e-6),
    ],
)
def test_each_stacked_model_matches_its_lone_run(
    data, objective, options, train_options, batching, tolerance
):
    dataset, split = data
    model_config = ModelConfig(objective=objective, latent_dim=4, **options)
    config = TrainConfig(steps=4, batch_size=8, report_every=2, **train_options)
    lone = []
    for seed in SEEDS:
        model, obj = fresh(model_config, dataset, seed)
        history = train(model, obj, dataset, split, config, seed=seed, device=CPU)
        lone.append((model, history))
    stacked = [fresh(model_config, dataset, seed)[0] for seed in SEEDS]
    result = train_stacked(
        stacked, obj, dataset, split, config, seeds=SEEDS, device=CPU, batching=batching
    )
    assert not result.diverged
    for (model, history), other, other_history in zip(lone, stacked, result.histories, strict=True):
        assert max_difference(model, other) < tolerance
        assert [h["step"] for h in history] == [h["step"] for h in other_history] == [2.0, 4.0]
        for row, other_row in zip(history, other_history, strict=True):
            assert row.keys() == other_row.keys()
            for key, value in row.items():
                assert other_row[key] == pytest.approx(value, rel=1e-4, abs=1e-4)
    # The seeds really differ: a stack of copies would pass the comparison above trivially.
    assert max_difference(stacked[0], stacked[1]) > 1e-3


def test_vmap_refuses_a_stack_that_reaches_a_host_side_solver(data):
    dataset, split = data
    model_config = ModelConfig(objective="cascade_vae", latent_dim=4, discrete_from=3)
    models = [fresh(model_config, dataset, seed)[0] for seed in SEEDS]
    objective = fresh(model_config, dataset, 0)[1]
    config = TrainConfig(steps=4, batch_size=8, report_every=2)
    with pytest.raises(ValueError, match="from step 3 on, which vmap cannot batch"):
        train_stacked(
            models, objective, dataset, split, config, seeds=SEEDS, device=CPU, batching="vmap"
        )


# stack_over: the models of a stack may differ in a loss weight (beta, lambda_od), each then
# training as its lone run with its own value, even at the same seed.
@pytest.mark.parametrize(
    ("objective", "weight", "values", "batching", "tolerance"),
    [
        ("beta_vae", "beta", [1.0, 8.0], "loop", 1e-6),
        ("beta_vae", "beta", [1.0, 8.0], "vmap", 1e-5),
        ("dip_vae_i", "lambda_od", [1.0, 20.0], "vmap", 1e-5),
        # The minibatch-weighted TC estimate (log-sum-exp over the batch) at beta 10 amplifies
        # vmap's float32 reordering: 1.0e-4 on this project's 2026-11-27 machine, <1e-5 on
        # 2026-11-25's (another CPU, same wheels).
        ("beta_tcvae", "beta", [1.0, 10.0], "vmap", 2e-4),
        ("annealed_vae", "gamma", [10.0, 1000.0], "vmap", 1e-5),
    ],
)
def test_models_differing_in_a_loss_weight_match_their_lone_runs(
    data, objective, weight, values, batching, tolerance
):
    dataset, split = data
    seed = SEEDS[0]
    configs = [ModelConfig(objective=objective, latent_dim=4, **{weight: v}) for v in values]
    config = TrainConfig(steps=4, batch_size=8, report_every=2, input_noise=True)
    lone = []
    for model_config in configs:
        model, obj = fresh(model_config, dataset, seed)
        history = train(model, obj, dataset, split, config, seed=seed, device=CPU)
        lone.append((model, history))
    pairs = [fresh(c, dataset, seed) for c in configs]
    result = train_stacked(
        [m for m, _ in pairs],
        [o for _, o in pairs],
        dataset,
        split,
        config,
        seeds=[seed, seed],
        device=CPU,
        batching=batching,
    )
    for (model, history), (other, _), other_history in zip(
        lone, pairs, result.histories, strict=True
    ):
        assert max_difference(model, other) < tolerance
        for row, other_row in zip(history, other_history, strict=True):
            for key, value in row.items():
                assert other_row[key] == pytest.approx(value, rel=1e-4, abs=1e-4)
    # Same seed, same batches, same start: only the weight set them apart.
    assert max_difference(pairs[0][0], pairs[1][0]) > 1e-4


def test_a_stack_cannot_differ_in_what_is_not_a_loss_weight(data):
    dataset, split = data
    pairs = [
        fresh(ModelConfig(objective="ada_gvae", latent_dim=4, k=k), dataset, 0) for k in (1, 2)
    ]
    config = TrainConfig(steps=2, batch_size=8)
    with pytest.raises(ValueError, match=r"differ in k .*AdaGVAE can vary beta"):
        train_stacked(
            [m for m, _ in pairs],
            [o for _, o in pairs],
            dataset,
            split,
            config,
            seeds=[0, 0],
            device=CPU,
        )


def test_stacked_resume_ends_where_an_uninterrupted_stack_ends(data, tmp_path):
    dataset, split = data
    model_config = ModelConfig(objective="beta_vae", latent_dim=4)
    config = TrainConfig(steps=6, batch_size=8, report_every=2, input_noise=True)
    whole = [fresh(model_config, dataset, s)[0] for s in SEEDS]
    objective = fresh(model_config, dataset, 0)[1]
    expected = train_stacked(whole, objective, dataset, split, config, seeds=SEEDS, device=CPU)

    states: dict[int, dict] = {}

    def keep(step, rows, state, diverged):
        if state is not None:
            states[step] = state

    first = [fresh(model_config, dataset, s)[0] for s in SEEDS]
    short = config.model_copy(update={"steps": 2})
    train_stacked(
        first, objective, dataset, split, short, seeds=SEEDS, device=CPU, on_progress=keep
    )
    # Saved and loaded as a Tune checkpoint is: weights only.
    state = states[2]
    path = tmp_path / "state.pt"
    torch.save(state, path)
    state = torch.load(path, weights_only=True)
    resumed = [fresh(model_config, dataset, 99)[0] for _ in SEEDS]  # weights come from state
    result = train_stacked(
        resumed, objective, dataset, split, config, seeds=SEEDS, device=CPU, resume_from=state
    )
    for a, b in zip(whole, resumed, strict=True):
        assert max_difference(a, b) == 0.0
    assert result.histories == expected.histories


def test_a_diverging_seed_leaves_the_others_untouched(data):
    dataset, split = data
    model_config = ModelConfig(objective="beta_vae", latent_dim=4)
    config = TrainConfig(steps=4, batch_size=8, report_every=2)
    lone = []
    for seed in SEEDS[1:]:
        model, obj = fresh(model_config, dataset, seed)
        train(model, obj, dataset, split, config, seed=seed, device=CPU)
        lone.append(model)
    stacked = [fresh(model_config, dataset, seed)[0] for seed in SEEDS]
    with torch.no_grad():
        stacked[0].encoder.mean.bias.fill_(math.inf)  # seed 3 diverges from its first step
    seen: list[dict[int, tuple[int, float]]] = []
    result = train_stacked(
        stacked,
        obj,
        dataset,
        split,
        config,
        seeds=SEEDS,
        device=CPU,
        on_progress=lambda step, rows, state, diverged: seen.append(dict(diverged)),
    )
    assert list(result.diverged) == [0] and result.diverged[0][0] == 2
    assert not math.isfinite(result.diverged[0][1])
    assert result.histories[0] == [] and len(result.histories[1]) == 2
    assert seen[0] == result.diverged
    for model, other in zip(lone, stacked[1:], strict=True):
        assert max_difference(model, other) < 1e-4

    everyone = [fresh(model_config, dataset, seed)[0] for seed in SEEDS]
    with torch.no_grad():
        for m in everyone:
            m.encoder.mean.bias.fill_(math.inf)
    with pytest.raises(TrainingDiverged, match="step 2"):
        train_stacked(everyone, obj, dataset, split, config, seeds=SEEDS, device=CPU)


def test_stacks_group_points_that_differ_only_in_seed(tmp_path):
    spec = load_spec(
        SMOKE,
        [
            "execution.seeds_per_trial=2",
            "grid={model: {objective: beta_vae, beta: [1, 4]}, seed: [0, 1, 2]}",
        ],
    )
    points = spec.points()
    stacks = spec.stacks()
    assert spec.num_trials() == 6 and spec.num_tune_trials() == 4
    assert sorted(j for g in stacks for j in g) == list(range(6))
    for group in stacks:
        betas = {points[j]["model"]["beta"] for j in group}
        assert len(betas) == 1 and len(group) <= 2
    assert [len(g) for g in stacks] == [2, 1, 2, 1]


def test_stack_over_groups_points_across_a_loss_weight():
    spec = load_spec(
        SMOKE,
        [
            "execution.seeds_per_trial=4",
            "execution.stack_over=[model.beta]",
            "grid={model: {objective: beta_vae, beta: [1, 4], latent_dim: [4, 6]}, seed: [0, 1]}",
        ],
    )
    points, stacks = spec.points(), spec.stacks()
    assert spec.num_trials() == 8 and spec.num_tune_trials() == 2
    for group in stacks:
        assert len({points[j]["model"]["latent_dim"] for j in group}) == 1
        assert {(points[j]["model"]["beta"], points[j]["seed"]) for j in group} == {
            (1, 0),
            (1, 1),
            (4, 0),
            (4, 1),
        }
    labels = stack_labels(points, stacks, spec.execution.stack_over)
    assert labels[0].endswith("_beta=1,seed=0+beta=1,seed=1+beta=4,seed=0+beta=4,seed=1")
    assert "latent_dim=4" in labels[0] and "latent_dim=6" in labels[1]


@pytest.mark.parametrize(
    ("overrides", "where", "message"),
    [
        (
            ["execution.stack_over=[model.beta]"],
            "execution.stack_over",
            "while execution.seeds_per_trial is 1",
        ),
        (
            [
                "execution.seeds_per_trial=2",
                "execution.stack_over=[model.k]",
                "grid={model: {objective: ada_gvae, k: [1, 2]}}",
            ],
            r"execution.stack_over\[0\]",
            "allowed: model.beta",
        ),
        (
            [
                "execution.seeds_per_trial=2",
                "execution.stack_over=[model.beta]",
                "grid={model: [{objective: beta_vae}, {objective: dip_vae_i}]}",
            ],
            r"execution.stack_over\[0\]",
            "allowed: none for beta_vae, dip_vae_i",
        ),
    ],
)
def test_a_bad_stack_over_is_refused_with_what_is_allowed(overrides, where, message):
    with pytest.raises(SpecError, match=where) as err:
        load_spec(SMOKE, overrides)
    assert message in str(err.value) and str(SMOKE) in str(err.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("grid={model: {objective: factor_vae}, seed: [0, 1]}", "factor_vae"),
        (
            "search={method: optuna, metric: dis/mig, mode: max, space: {seed: {int: [0, 3]}}}",
            "optuna",
        ),
    ],
)
def test_what_cannot_be_stacked_is_refused_before_anything_runs(override, message):
    with pytest.raises(SpecError, match=r"execution\.seeds_per_trial") as err:
        load_spec(SMOKE, ["execution.seeds_per_trial=2", "grid={}", override])
    assert message in str(err.value) and str(SMOKE) in str(err.value)


# Heavy (34 s of CI's 2 cores): the stack over beta below runs the same path (one finished run
# per model, distinct losses, every step logged) and CI keeps that one.
@pytest.mark.heavy
def test_a_stacked_study_logs_one_finished_run_per_seed(ray_local, tmp_path):
    spec = load_spec(
        SMOKE,
        tiny(
            "stacked",
            LIGHT,
            "execution.seeds_per_trial=2",
            "grid={model: {objective: beta_vae, beta: [1, 4]}, seed: [0, 1]}",
        ),
    )
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok and outcome.info.num_tune_trials == 2 and outcome.info.models == 4
    client = mlflow.MlflowClient(outcome.info.tracking_uri)
    runs = client.search_runs([outcome.info.experiment_id], TRIAL_RUNS, max_results=100)
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    seen = {(r.data.params["model.beta"], r.data.params["seed"]) for r in runs}
    assert seen == {("1.0", "0"), ("1.0", "1"), ("4.0", "0"), ("4.0", "1")}
    for run in runs:
        assert run.data.params["seeds_per_trial"] == "2"
        assert "dis/mig" in run.data.metrics
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(steps) == [4, 8]
    # Two seeds of one stack are two models, not one logged twice.
    by_stack: dict[str, list] = {}
    for run in runs:
        by_stack.setdefault(run.data.tags[STACK_TAG], []).append(run)
    assert len(by_stack) == 2
    for pair in by_stack.values():
        assert pair[0].data.metrics["train/loss"] != pair[1].data.metrics["train/loss"]
    saved = yaml.safe_load((outcome.info.study_dir / "spec.yaml").read_text())
    assert saved["execution"]["seeds_per_trial"] == 2


def test_an_interrupted_stacked_trial_resumes_the_same_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("stack")
    base = load_spec(SMOKE, tiny("stack", LIGHT, "train.report_every=2")).trials()[0]
    configs = [base.model_copy(update={"seed": s}) for s in (0, 1)]
    ctx = TrialContext(uri, experiment, None, "stack", "t0", "t0")
    reporter = StopAfter(step=4)
    with pytest.raises(KeyboardInterrupt):
        run_seed_stack(configs, ctx, reporter, ["seed0", "seed1"])
    runs = client.search_runs([experiment])
    assert {r.info.status for r in runs} == {"KILLED"} and len(runs) == 2
    final = run_seed_stack(configs, ctx, reporter, ["seed0", "seed1"])
    runs = client.search_runs([experiment])
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    for run in runs:
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(steps) == [2, 4, 6, 8]  # resumed at 4: no step lost, none logged twice
        assert "dis/mig" in run.data.metrics
        # each model logs its own figures, the held-out ones of dittadi_hues among them
        logged = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {
            "heldout_reconstructions_ood2_a.png",
            "heldout_reconstructions_ood2_b.png",
        } <= logged
        # Every model's run has the lineage and data, logged once though opened twice...
        assert run.data.tags[DEVICE_TAG] and run.data.tags[version_tag("torch")]
        (used,) = client.get_run(run.info.run_id).inputs.dataset_inputs
        assert used.dataset.name == f"{base.dataset.name}/{base.split}"
        # ...and a system-metrics point per process, the last interval's when it stopped,
        # the resumed one continuing the steps.
        cpu = client.get_metric_history(run.info.run_id, system_key("cpu_utilization_percentage"))
        assert sorted(m.step for m in cpu) == [0, 1]
    assert final["dis/mig"] == pytest.approx(np.mean([r.data.metrics["dis/mig"] for r in runs]))
    # Both seeds were finished: a third call reports them and evaluates nothing again.
    before = [r.data.metrics for r in runs]
    again = run_seed_stack(configs, ctx, LocalReporter(), ["seed0", "seed1"])
    assert {k: again[k] for k in final} == pytest.approx(final)
    assert [r.data.metrics for r in client.search_runs([experiment])] == before


def test_one_seeds_failed_evaluation_leaves_the_others_finished_in_tune_too(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("stack")
    base = load_spec(SMOKE, tiny("stack", LIGHT)).trials()[0]
    configs = [base.model_copy(update={"seed": s}) for s in (0, 1)]
    # finish_model, which lone and stacked trials share, scores each model
    from raystudy.trials import finish as trial_finish

    evaluate = trial_finish.score_model

    def fails_for_seed_1(model, dataset, split, config, device, n_jobs=1):
        if config.seed == 1:  # an injected fault in one model's evaluation only
            raise ValueError("probe failed on seed 1")
        return evaluate(model, dataset, split, config, device, n_jobs=n_jobs)

    monkeypatch.setattr(trial_finish, "score_model", fails_for_seed_1)
    reporter = LocalReporter()
    with pytest.raises(ValueError, match="seed 1"):
        run_seed_stack(
            configs,
            TrialContext(uri, experiment, None, "s", "t0", "t0"),
            reporter,
            ["seed0", "seed1"],
        )
    status = {r.info.run_name: r.info.status for r in client.search_runs([experiment])}
    assert status == {"seed0": "FINISHED", "seed1": "FAILED"}
    # Tune got seed 0's scores before the error: read back, it finished and seed 1 failed.
    trial = TuneTrial("t0", "t0", {"stack": 0}, reporter.results, "ValueError: probe failed")
    kept, lost = trial.member(0, "seed0", "t0/seed=0"), trial.member(1, "seed1", "t0/seed=1")
    assert kept.status == "FINISHED" and "dis/mig" in kept.final()
    assert lost.status == "FAILED" and lost.error == "ValueError: probe failed"


# heavy: the suite's 10-minute budget (docs/performance/test-suite.md).
@pytest.mark.heavy
def test_a_stack_over_beta_is_read_and_synced_from_tune_model_by_model(ray_local, tmp_path):
    spec = load_spec(
        SMOKE,
        tiny(
            "beta_stack",
            LIGHT,
            # 4 models, 3 per trial: a stack of 3 (two betas) and a stack of 1
            "execution.seeds_per_trial=3",
            "execution.stack_over=[model.beta]",
            "grid={model: {objective: beta_vae, beta: [1, 4]}, seed: [0, 1]}",
        ),
    )
    outcome = run_study(spec, output=tmp_path, verbose=0)
    assert outcome.ok and outcome.info.num_tune_trials == 2 and outcome.info.models == 4
    client = mlflow.MlflowClient(outcome.info.tracking_uri)
    runs = client.search_runs([outcome.info.experiment_id], TRIAL_RUNS)
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    by_name = {r.info.run_name: r for r in runs}
    assert {(r.data.params["model.beta"], r.data.params["seed"]) for r in runs} == {
        ("1.0", "0"),
        ("1.0", "1"),
        ("4.0", "0"),
        ("4.0", "1"),
    }
    assert len({r.data.metrics["train/loss"] for r in runs}) == 4
    sizes = sorted(r.data.params["seeds_per_trial"] for r in runs)
    assert sizes == ["1", "3", "3", "3"] and len({r.data.tags[STACK_TAG] for r in runs}) == 2
    saved = yaml.safe_load((outcome.info.study_dir / "spec.yaml").read_text())
    assert saved["execution"]["seeds_per_trial"] == 3
    assert saved["execution"]["stack_over"] == ["model.beta"]

    # Tune's storage alone gives the same table, model by model.
    tune = load_tune_results(outcome.info.study_dir)
    assert sorted(tune[RUN_NAME]) == sorted(by_name)
    for _, row in tune.iterrows():
        run = by_name[row[RUN_NAME]]
        assert row["status"] == "FINISHED"
        assert row[column(TRIAL_ID_TAG)] == run.data.tags[TRIAL_ID_TAG]
        assert row["params.model.beta"] == run.data.params["model.beta"]
        assert row["params.seed"] == run.data.params["seed"]
        for key in ("dis/mig", "train/loss", "transfer/ood2_a/gbt/mae"):
            assert row[f"metrics.{key}"] == pytest.approx(run.data.metrics[key]), key

    # ... and completes the four runs in a store that never saw them.
    uri = f"sqlite:///{tmp_path / 'other.db'}"
    experiment = mlflow.MlflowClient(uri).create_experiment("synced")
    records = run_records(outcome.info.study_dir)
    assert len(records) == 4
    for record in records:
        assert sync_run(uri, experiment, None, record)
    other = mlflow.MlflowClient(uri)
    synced = {r.info.run_name: r for r in other.search_runs([experiment])}
    assert synced.keys() == by_name.keys()
    for name, run in synced.items():
        original = by_name[name]
        assert run.info.status == "FINISHED"
        for key in ("model.beta", "seed", "seeds_per_trial"):
            assert run.data.params[key] == original.data.params[key], key
        assert run.data.tags[STACK_TAG] == original.data.tags[STACK_TAG]
        assert run.data.metrics["dis/mig"] == pytest.approx(original.data.metrics["dis/mig"])
        steps = [m.step for m in other.get_metric_history(run.info.run_id, "train/loss")]
        assert sorted(steps) == [4, 8]


def test_a_stacked_tune_trial_splits_into_its_models():
    rows = [  # as a stacked trial reports to Tune: the mean, and each model under stack/<s>/
        {"step": 4.0, "train/loss": 1.5, "stack/0/train/loss": 1.0, "stack/1/train/loss": 2.0},
        {"step": 8.0, "train/loss": 1.0, "stack/0/train/loss": 1.0, "stack/1/diverged_at_step": 8},
        {
            "step": 8.0,
            "dis/mig": 0.3,
            "stack/0/dis/mig": 0.3,
            "stack/1/diverged_at_step": 8,
            "evaluated": 1.0,
        },
    ]
    trial = TuneTrial("t", "id", {"stack": 0}, rows, None)
    kept, lost = trial.member(0, "a", "id/seed=0"), trial.member(1, "b", "id/seed=1")
    assert kept.status == "FINISHED" and kept.final() == {"dis/mig": 0.3}
    assert kept.history() == [(4, {"train/loss": 1.0}), (8, {"train/loss": 1.0})]
    assert lost.status == "FAILED" and "step 8" in (lost.error or "")
    assert lost.history() == [(4, {"train/loss": 2.0})] and lost.final() == {}

    spec = load_spec(SMOKE, ["execution.seeds_per_trial=2", "grid={seed: [0, 1]}"])
    started = TuneTrial("t", "id", {"stack": 0}, [], None)  # no report yet: running, not stale
    assert [m.status for m, _, _ in models_of(started, spec, "s")] == ["RUNNING", "RUNNING"]
    # Stopped by Tune (ASHA) before its scores: killed, as the study's end marks its runs.
    stopped = TuneTrial("t", "id", {"stack": 0}, rows[:1], None, tune_state="TERMINATED")
    assert [m.status for m, _, _ in models_of(stopped, spec, "s")] == ["KILLED", "KILLED"]
    stale = TuneTrial("t", "id", {"stack": 0}, [{"step": 4.0, "train/loss": 1.5}], None)
    with pytest.raises(StudyError, match="reported only the mean"):
        models_of(stale, spec, "s")
