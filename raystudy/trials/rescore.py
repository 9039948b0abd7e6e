"""Scoring a finished trial's logged encoder again, with metrics or probes the study did not
train with (`raystudy rescore`), and writing the scores into the trial's own MLflow run.

disentanglement_lib keeps training, post-processing and evaluation as separate stages, so that
a new metric runs over saved models; here the trial's logged model (`runs:/<id>/model`) is
scored by `raystudy.evaluate.encoder_scores` on the trial's dataset, split and evaluation draws
(`evaluation.seed`), the keys exactly those a trial trained with the metric would log, at the
step of the run's other final scores. No Ray: `raystudy.tune.tasks` runs this as a task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from raystudy.evaluate import encoder_scores, evaluation_setup
from raystudy.keys import FINAL_PREFIXES
from raystudy.spec import TrialConfig
from raystudy.spec.url_secrets import expand
from raystudy.tags import RESCORED_TAG, probe_tag

#: MLflow's limit on the entries of one log_batch (metrics, params and tags together).
BATCH = 1000


@dataclass(frozen=True)
class RescoreJob:
    """One trial run to score again: its run, its trial config, what to add."""

    tracking_uri: str
    run_id: str
    run_name: str
    config: TrialConfig
    metrics: tuple[str, ...]
    probes: tuple[str, ...]


def rescored_names(tags: dict[str, str]) -> set[str]:
    """What earlier rescores added to a run ("metric:<name>", "probe:<name>")."""
    raw = tags.get(RESCORED_TAG)
    if not raw:
        return set()
    try:
        return {str(n) for n in json.loads(raw)}
    except (ValueError, TypeError):
        return set()  # a damaged tag: the run is scored again, which repeats equal values


def wanted(metrics: Sequence[str], probes: Sequence[str]) -> set[str]:
    return {f"metric:{m}" for m in metrics} | {f"probe:{p}" for p in probes}


def rescore_run(job: RescoreJob, device: str = "cpu") -> dict[str, float]:
    """Score the run's logged encoder with `job.metrics` and `job.probes` only, log the keys to
    the run at its final scores' step, then record them in the run's RESCORED_TAG; returns
    the scores."""
    config = job.config
    split = config.split if isinstance(config.split, str) else dict(config.split)
    setup = evaluation_setup(
        config.dataset.name,
        split,
        config.evaluation,
        metrics=list(job.metrics),
        probes=list(job.probes),
        dataset_options=config.dataset.options,
    )
    scored = encoder_scores(
        f"runs:/{job.run_id}/model", setup, tracking_uri=job.tracking_uri, device=device
    )
    client = MlflowClient(expand(job.tracking_uri))
    run = client.get_run(job.run_id)
    step = _final_step(client, job.run_id, list(run.data.metrics), config.train.steps)
    now = int(time.time() * 1000)
    metrics = [Metric(k, float(v), now, step) for k, v in sorted(scored.scores.items())]
    done = rescored_names(run.data.tags) | wanted(job.metrics, job.probes)
    tags = [RunTag(RESCORED_TAG, json.dumps(sorted(done)))] + [
        RunTag(probe_tag(name), how) for name, how in getattr(scored.scores, "probes", {}).items()
    ]
    # The tag goes in the same batch as the last scores: a SQL store (sqlite, PostgreSQL, or
    # one behind a tracking server) writes a batch in one transaction, so a kill leaves a
    # run either scored and tagged or untouched, never scored twice by the next rescore.
    # MLflow takes at most 1,000 entries a batch; earlier chunks of a larger set go first.
    last = max(0, len(metrics) - BATCH + 1)
    for i in range(0, last, BATCH):
        client.log_batch(job.run_id, metrics=metrics[i : min(i + BATCH, last)])
    client.log_batch(job.run_id, metrics=metrics[last:], tags=tags)
    return scored.scores


def _final_step(client: MlflowClient, run_id: str, keys: list[str], default: int) -> int:
    """The step the trial logged its final scores at (one of them read back), else `default`."""
    finals = sorted(k for k in keys if k.startswith(FINAL_PREFIXES))
    if not finals:
        return default
    history = client.get_metric_history(run_id, finals[0])
    return max(m.step for m in history) if history else default
