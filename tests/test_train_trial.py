"""A trial (no Ray) records its model's size and cost among its MLflow params, and evaluates
gt_decoder on the ground-truth factors themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from raystudy.spec import TrialConfig
from raystudy.trial import TrialContext, run_trial


class ListReporter:
    def __init__(self) -> None:
        self.reports: list[dict[str, float]] = []

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        self.reports.append(metrics)

    def restore(self) -> dict[str, Any] | None:
        return None


def test_trial_logs_model_cost_and_scores_gt_decoder_on_the_factors(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("zoo")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "split": "iid",
            "model": {"objective": "gt_decoder", "latent_dim": 10},
            "train": {"steps": 2, "batch_size": 8, "report_every": 1, "checkpoint_every": 2},
            "evaluation": {
                "metrics": ["dci"],
                "probes": ["gbt"],
                "num_train": 400,
                "num_test": 200,
                "probe_train": 40,
                "probe_test": 20,
                "num_eval_images": 16,
            },
        }
    )
    results = run_trial(
        config, TrialContext(uri, experiment, None, "zoo", "t1", "gt"), ListReporter()
    )
    run = client.search_runs([experiment])[0]
    params = run.data.params
    assert run.info.status == "FINISHED"
    assert int(params["model.num_params"]) > 100_000
    assert int(params["model.flops_per_step"]) > 10**8
    assert results["dis/dci_d"] > 0.95  # the code is the factors: 5 dimensions, one each
    assert "train/regression" in run.data.metrics
