"""`raystudy evaluate` and `evaluate_encoder`: encoders whose scores are known by construction
(the ground-truth factors, a random projection of them, a constant), bad encoders refused by
name before any metric runs, and an external encoder's run analysed beside a trained one."""

from __future__ import annotations

import json
from pathlib import Path

import known_encoders
import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from raystudy import evaluate_encoder
from raystudy.analysis.core.groups import trial_groups, with_supervision
from raystudy.cli import app
from raystudy.evaluate import EncoderError
from raystudy.spec import SpecError, TrialConfig
from raystudy.tags import EXTERNAL_ROLE, MODEL_TAG, ROLE_TAG, column
from raystudy.tracking.reader import trial_runs_table
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

EVALUATION = {
    "metrics": ["mig"],
    "probes": ["linear"],
    "num_train": 200,
    "num_test": 100,
    "probe_train": 100,
    "probe_test": 50,
}
#: Mean |y - 1/2| of a uniform factor of n values on [0, 1]: 1/2 for n = 2, 1/3 for 3 and 4;
#: what a probe that can only predict the mean scores, over the seven factors of SIZES.
CHANCE_MAE = (5 * 0.5 + 1 / 3 + 1 / 3) / 7


@pytest.fixture(scope="module")
def mpi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = known_encoders.factor_images(tmp_path_factory.mktemp("mpi") / "mpi3d_toy.npz")
    return {"path": str(path), "factor_sizes": list(known_encoders.SIZES)}


def score(encoder: object, mpi: dict[str, object], **kw: object) -> dict[str, float]:
    return evaluate_encoder(encoder, "mpi3d_file", "iid", EVALUATION, dataset_options=mpi, **kw)


def test_encoders_known_by_construction_score_as_they_must(mpi: dict[str, object]) -> None:
    truth = score("known_encoders:factors", mpi)
    mixed = score("known_encoders:projection", mpi)  # a factory of an nn.Module
    nothing = score(known_encoders.constant, mpi)  # a callable, returning numpy
    keys = {"dis/mig", "transfer/iid/linear/mae", "transfer/iid/linear/mae/object_color"}
    assert keys <= set(truth) and set(truth) == set(mixed) == set(nothing)
    # The factors themselves: every factor in one code dimension of its own, read exactly.
    assert truth["dis/mig"] > 0.9
    assert truth["transfer/iid/linear/mae"] < 1e-9
    # A full-rank linear map of them (in float32): still exactly informative, no longer
    # disentangled.
    assert mixed["transfer/iid/linear/mae"] < 1e-6
    assert mixed["dis/mig"] < truth["dis/mig"] - 0.2
    # A constant: nothing to read; the probe predicts the training mean.
    assert nothing["dis/mig"] == 0.0
    assert nothing["transfer/iid/linear/mae"] == pytest.approx(CHANCE_MAE, abs=0.05)
    # The same draws every time (evaluation.seed), so the same numbers.
    assert score("known_encoders:factors", mpi) == truth


@pytest.mark.parametrize(
    ("encoder", "message"),
    [
        ("no_such_package.mod:fn", r"module 'no_such_package.mod' cannot be imported"),
        ("known_encoders:nope", r"module 'known_encoders' has no 'nope' \(it has: .*factors"),
        ("known_encoders", r"expected runs:/<run id>/model, .*package.module:function"),
        ("known_encoders:flat", r"returned shape \(21,\) for 3 images"),
        ("known_encoders:one_row", r"returned 1 rows for a batch of 3 images"),
        ("known_encoders:with_nan", r"returned NaN or infinite codes for 1 of 3 images"),
        ("known_encoders:mu_and_logvar", r"returned a tuple of 2 \(a VAE's \(mu, logvar\)"),
    ],
)
def test_a_bad_encoder_is_refused_by_name_with_what_was_expected(
    encoder: str, message: str, mpi: dict[str, object]
) -> None:
    with pytest.raises(EncoderError, match=message) as err:
        score(encoder, mpi)
    assert f"encoder {encoder!r}" in str(err.value)


def test_own_needs_a_code_per_factor_and_bad_settings_name_their_field(
    mpi: dict[str, object],
) -> None:
    with pytest.raises(EncoderError, match=r"probe 'own' .* needs 7 columns .* gives 10"):
        score("known_encoders:projection", mpi, probes=["own"])
    own = score("known_encoders:factors", mpi, metrics=[], probes=["own"])
    assert own["transfer/iid/own/mae"] < 1e-9  # column k is factor k
    with pytest.raises(
        SpecError, match=r"evaluation\.metrics\[0\]: unknown metric 'mgi'.*did you mean 'mig'"
    ):
        score("known_encoders:factors", mpi, metrics=["mgi"])
    with pytest.raises(SpecError, match=r"split: unknown split 'iidd'"):
        evaluate_encoder("known_encoders:factors", "mpi3d_file", "iidd", dataset_options=mpi)


def test_the_cli_scores_writes_json_and_logs_an_external_run_analysed_as_its_own_group(
    mpi: dict[str, object], tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("beside")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "mpi3d_file", "options": mpi},
            "split": "iid",
            "model": {"objective": "beta_vae", "latent_dim": 3},
            "train": {"steps": 2, "batch_size": 4, "report_every": 2},
            "evaluation": {**EVALUATION, "num_eval_images": 8},
        }
    )
    ctx = TrialContext(uri, experiment, None, "beside", "t0", "t0", log_models=False)
    trained = run_trial(config, ctx, LocalReporter())
    out = tmp_path / "scores.json"
    args = ["evaluate", "--encoder", "known_encoders:factors", "--dataset", "mpi3d_file"]
    args += [f"-O path={mpi['path']}", f"-O factor_sizes={list(known_encoders.SIZES)}"]
    args += ["--metrics", "mig", "--probes", "linear", "--set", "num_train=200"]
    args += ["--set", "num_test=100", "--set", "probe_train=100", "--set", "probe_test=50"]
    args += ["--json", str(out), "--experiment", "beside", "--tracking-uri", uri]
    result = CliRunner().invoke(app, [a for arg in args for a in arg.split(" ", 1)])
    assert result.exit_code == 0, result.output
    assert "transfer/iid/linear/mae" in result.output and "Logged as run" in result.output
    # Each step said on stderr as it starts: the scores alone on stdout.
    steps = [line.split("] ")[1] for line in result.stderr.splitlines() if "evaluate [" in line]
    assert steps == ["encoding 300 images", "metric mig", "probes linear on scenario iid (1/1)"]
    assert "evaluate [" not in result.stdout
    written = json.loads(out.read_text())
    assert written == score("known_encoders:factors", mpi)  # the API's numbers, flat
    # Beside the trained model: the same keys, the same cell, a group of its own.
    frame = with_supervision(trial_runs_table(uri, experiment))
    assert len(frame) == 2
    external = frame[frame[column(ROLE_TAG)] == EXTERNAL_ROLE].iloc[0]
    assert external[column(MODEL_TAG)] == "known_encoders:factors"
    assert external["params.dataset.name"] == "mpi3d_file" and external["params.split"] == "iid"
    assert set(written) <= {k for k in trained if not k.startswith(("eval/", "train/"))}
    assert external["metrics.dis/mig"] == written["dis/mig"]
    groups = dict(trial_groups(frame))
    assert list(frame.loc[groups["supervision=external"], "run_id"]) == [external["run_id"]]
    assert len(groups["supervision=unsupervised"]) == 1 and len(groups["all"]) == 2


def test_the_cli_refuses_a_bad_encoder_and_a_logged_model_without_a_store(
    mpi: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    runner = CliRunner()
    base = ["evaluate", "--dataset", "mpi3d_file", "-O", f"path={mpi['path']}"]
    base += ["-O", f"factor_sizes={list(known_encoders.SIZES)}"]
    result = runner.invoke(app, [*base, "--encoder", "known_encoders:with_nan"])
    assert result.exit_code == 2 and "encoder 'known_encoders:with_nan'" in result.output
    result = runner.invoke(app, [*base, "--encoder", "runs:/abc/model"])
    assert result.exit_code == 2 and "needs an MLflow store" in result.output
