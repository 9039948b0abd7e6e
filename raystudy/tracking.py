"""The only module that writes to MLflow.

One experiment per study, one parent run for the study, one run per trial. Trials log from
their own worker process with `MlflowClient` (not Ray's MLflow callback, which logs on the
driver synchronously and splits restored trials into two runs), and find their run again by
the `ray_trial_id` tag, so a retried or restored trial keeps a single run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

TRIAL_ID_TAG = "ray_trial_id"
ROLE_TAG = "raystudy.role"
STUDY_TAG = "raystudy.study"
PARENT_TAG = "mlflow.parentRunId"
# MLflow caps one log_batch call at 1000 metrics / 100 params.
_MAX_METRICS, _MAX_PARAMS = 1000, 100


def default_uri(study_dir: Path) -> str:
    """An absolute sqlite URI: trials run in other working directories, so no relative path."""
    return f"sqlite:///{(study_dir / 'mlflow.db').resolve()}"


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class StudyTracker:
    """Driver side: the experiment and the study's parent run, created before any trial runs.

    Creating them here, once, matters: a fresh sqlite store hit by several trial processes at
    once fails its schema migration, and `set_experiment` under concurrency misfiles runs.
    """

    def __init__(self, uri: str, experiment_id: str, parent_run_id: str) -> None:
        self.uri, self.experiment_id, self.parent_run_id = uri, experiment_id, parent_run_id
        self.client = MlflowClient(uri)

    @classmethod
    def start(
        cls, uri: str, study: str, artifact_dir: Path, tags: Mapping[str, str]
    ) -> StudyTracker:
        client = MlflowClient(uri)
        experiment = client.get_experiment_by_name(study)
        if experiment is None:
            # A local store keeps artifacts in the study folder; a tracking server decides
            # itself (it usually proxies them to its own artifact store).
            local = uri.startswith(("sqlite:", "file:", "/"))
            experiment_id = client.create_experiment(
                study, artifact_location=artifact_dir.resolve().as_uri() if local else None
            )
        else:
            experiment_id = experiment.experiment_id
        run = client.create_run(
            experiment_id,
            run_name=study,
            tags={ROLE_TAG: "study", STUDY_TAG: study, **tags},
        )
        return cls(uri, experiment_id, run.info.run_id)

    def reopen(self) -> None:
        """Mark the parent run running again (a resumed study)."""
        self.client.update_run(self.parent_run_id, status="RUNNING")

    def log_artifact(self, path: Path) -> None:
        self.client.log_artifact(self.parent_run_id, str(path))

    def log_analysis(self, files: list[Path], artifact_path: str = "analysis") -> None:
        """The files of `raystudy analyze` on the parent run; a later analysis replaces them."""
        for path in files:
            self.client.log_artifact(self.parent_run_id, str(path), artifact_path)

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        log_metrics(self.client, self.parent_run_id, metrics, step=0)

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.parent_run_id, status=status)


def log_metrics(client: MlflowClient, run_id: str, metrics: Mapping[str, float], step: int) -> None:
    now = int(time.time() * 1000)
    entries = [Metric(k, float(v), now, step) for k, v in metrics.items()]
    for chunk in _chunks(entries, _MAX_METRICS):
        client.log_batch(run_id, metrics=chunk)


class TrialRun:
    """Worker side: the MLflow run of one trial."""

    def __init__(
        self, client: MlflowClient, run_id: str, finished: dict[str, float] | None = None
    ) -> None:
        self.client, self.run_id = client, run_id
        #: The final metrics of a run that had already finished when it was opened again
        #: (its trial was cut off between logging its results and reporting them to Tune).
        self.finished = finished

    @classmethod
    def open(
        cls,
        uri: str,
        experiment_id: str,
        trial_id: str,
        run_name: str,
        params: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
    ) -> TrialRun:
        """Find this trial's run by its Ray trial id, or create it (params logged once)."""
        client = MlflowClient(uri)
        found = client.search_runs(
            [experiment_id], filter_string=f"tags.{TRIAL_ID_TAG} = '{trial_id}'", max_results=1
        )
        if found:
            run_id = found[0].info.run_id
            if found[0].info.status == "FINISHED":
                return cls(client, run_id, finished=dict(found[0].data.metrics))
            client.update_run(run_id, status="RUNNING")
            return cls(client, run_id)
        all_tags = {ROLE_TAG: "trial", TRIAL_ID_TAG: trial_id, **tags}
        if parent_run_id:
            all_tags[PARENT_TAG] = parent_run_id
        run = client.create_run(experiment_id, run_name=run_name, tags=all_tags)
        entries = [Param(k, str(v)) for k, v in params.items()]
        for chunk in _chunks(entries, _MAX_PARAMS):
            client.log_batch(run.info.run_id, params=chunk)
        return cls(client, run.info.run_id)

    def last_step(self, key: str) -> int:
        """The largest step logged for `key` (-1 if none): a resumed trial skips those."""
        history = self.client.get_metric_history(self.run_id, key)
        return max((m.step for m in history), default=-1)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        log_metrics(self.client, self.run_id, metrics, step)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)
