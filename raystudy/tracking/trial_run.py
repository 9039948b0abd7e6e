"""The MLflow run of one trial, from its worker process (`TrialRun`).

Trials log from their own worker process with `MlflowClient` (not Ray's MLflow callback, which
logs on the driver synchronously and splits restored trials into two runs), and find their run
again by the `ray_trial_id` tag, so a retried or restored trial keeps a single run.

A tracking server that stops answering does not stop a study: a trial whose writes cannot reach
it goes on without them (`TrialRun.offline`), because every result also goes to Tune, whose
storage the driver logs from when the study ends or resumes (`raystudy.tracking.sync`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from raystudy.phases import phase
from raystudy.spec.url_secrets import expand
from raystudy.tags import (
    CLOSED_TAG,
    EARLIER_ERROR_TAG,
    ERROR_TAG,
    PARENT_TAG,
    ROLE_TAG,
    RUN_FINISHED,
    RUN_RUNNING,
    TRIAL_ID_TAG,
    TRIAL_ROLE,
    equals,
)
from raystudy.tracking.batches import MAX_METRICS, MAX_PARAMS, chunks
from raystudy.tracking.retry import (
    check_reachable,
    is_unreachable,
    retry_busy,
    unreachable_message,
)

#: The pause before a dataset input refused by a concurrent insert is sent again.
DATASET_RACE_RETRY_S = 0.2

if TYPE_CHECKING:
    import torch


class TrialRun:
    """Worker side: the MLflow run of one trial.

    When the store cannot be reached (after MLflow's own retries) the run goes `offline`: it
    says so once on stderr and skips every later write instead of failing a trial whose
    results Tune keeps anyway; `sync_run` logs them from Tune's storage afterwards.
    """

    def __init__(
        self,
        uri: str,
        run_id: str | None,
        finished: dict[str, float] | None = None,
        offline: str | None = None,
    ) -> None:
        self.uri, self.run_id = uri, run_id
        #: The final metrics of a run that had already finished when it was opened again
        #: (its trial was cut off between logging its results and reporting them to Tune).
        self.finished = finished
        #: Why this run stopped writing (the store became unreachable), or None.
        self.offline = offline

    @cached_property
    def client(self) -> MlflowClient:
        # Made when first written with, never for an offline run: MLflow's client for a
        # database store connects as it is made, retrying a stopped one for ~100 s.
        return MlflowClient(expand(self.uri))

    def _write(self, write: Callable[[], object]) -> None:
        if self.offline is not None:
            return
        try:
            with phase("mlflow"):
                retry_busy(write)  # one request: a busy store rolled it back
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            self._go_offline(exc)

    def _go_offline(self, exc: BaseException) -> None:
        self.offline = unreachable_message(self.uri, exc)
        print(
            f"raystudy: {self.offline}; the trial goes on without MLflow (run "
            f"{self.run_id or 'not created'}): its results stay in Tune's storage and are "
            "logged to MLflow when the study ends or resumes",
            file=sys.stderr,
            flush=True,
        )

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
        """Find this trial's run by its Ray trial id, or create it (params logged once); an
        `offline` run without an id when the store cannot be reached."""
        try:
            # A stopped server or database is said in seconds, not after MLflow's retries.
            check_reachable(uri)
            client = MlflowClient(expand(uri))
            # Each call is retried on its own: the sequence as a whole is not idempotent.
            found = retry_busy(
                lambda: client.search_runs(
                    [experiment_id],
                    filter_string=equals(TRIAL_ID_TAG, trial_id),
                    max_results=1,
                )
            )
            if found:
                run_id = found[0].info.run_id
                if found[0].info.status == RUN_FINISHED:
                    return cls(uri, run_id, finished=dict(found[0].data.metrics))
                retry_busy(lambda: client.update_run(run_id, status=RUN_RUNNING))
                if CLOSED_TAG in found[0].data.tags:  # the trial is back: no longer closed
                    retry_busy(lambda: client.delete_tag(run_id, CLOSED_TAG))
                earlier = found[0].data.tags.get(ERROR_TAG)
                if earlier is not None:
                    # This attempt may succeed: the run's error is the last attempt's only.
                    retry_busy(lambda: client.set_tag(run_id, EARLIER_ERROR_TAG, earlier))
                    retry_busy(lambda: client.delete_tag(run_id, ERROR_TAG))
                return cls(uri, run_id)
            all_tags = {ROLE_TAG: TRIAL_ROLE, TRIAL_ID_TAG: trial_id, **tags}
            if parent_run_id:
                all_tags[PARENT_TAG] = parent_run_id
            run = retry_busy(
                lambda: client.create_run(experiment_id, run_name=run_name, tags=all_tags)
            )
            entries = [Param(k, str(v)) for k, v in params.items()]
            for chunk in chunks(entries, MAX_PARAMS):
                retry_busy(lambda chunk=chunk: client.log_batch(run.info.run_id, params=chunk))
            return cls(uri, run.info.run_id)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            offline = cls(uri, None)
            offline._go_offline(exc)
            return offline

    def last_step(self, key: str) -> int:
        """The largest step logged for `key` (-1 if none): a resumed trial skips those."""
        return max(self.logged_steps(key), default=-1)

    def logged_steps(self, key: str) -> set[int]:
        """The steps logged for `key` (none when offline)."""
        steps: set[int] = set()

        def read() -> None:
            steps.update(m.step for m in self.client.get_metric_history(self.run_id, key))

        self._write(read)  # a read, but an unreachable store means the same: go offline
        return steps

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        self._log([Metric(k, float(v), now, step) for k, v in metrics.items()])

    def log_points(self, points: list[tuple[str, float, int]]) -> None:
        """(key, value, step) triples, several steps per request."""
        now = int(time.time() * 1000)
        self._log([Metric(k, float(v), now, step) for k, v, step in points])

    def _log(self, entries: list[Metric]) -> None:
        for chunk in chunks(entries, MAX_METRICS):  # one write each: retried on its own
            self._write(lambda chunk=chunk: self.client.log_batch(self.run_id, metrics=chunk))

    def set_tags(self, tags: Mapping[str, str]) -> None:
        batch = [RunTag(k, str(v)) for k, v in tags.items()]
        self._write(lambda: self.client.log_batch(self.run_id, tags=batch))

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self._write(lambda: self.client.log_artifact(self.run_id, str(path), artifact_path))

    def log_model(
        self,
        encoder: torch.nn.Module,
        example: torch.Tensor,
        *,
        params: Mapping[str, Any],
        tags: Mapping[str, str],
        step: int,
        registered_name: str | None = None,
    ) -> str | None:
        """Log `encoder` as this run's MLflow model (`tracking.models.log_encoder`) and, with
        `registered_name`, register it; returns its `models:/<id>` URI (None when offline).
        A store that cannot be reached takes the run offline; any other error is raised."""
        from raystudy.tracking.models import log_encoder, register_model

        if self.offline is not None or self.run_id is None:
            return None
        run_id = self.run_id
        try:
            model_id = log_encoder(
                self.client, run_id, encoder, example, params=params, tags=tags, step=step
            )
            if registered_name is not None:
                register_model(self.client, registered_name, run_id, model_id, tags)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            self._go_offline(exc)
            return None
        return f"models:/{model_id}"

    def log_dataset(
        self,
        name: str,
        digest: str,
        source: Mapping[str, Any],
        profile: Mapping[str, Any],
        context: str = "training",
    ) -> None:
        """A dataset input (the run page's "Datasets used"); MLflow keeps one dataset per
        (name, digest) in the experiment, so runs on the same data link the same one, and
        logging it again (a resumed trial) adds nothing."""
        dataset = Dataset(
            name=name,
            digest=digest,
            source_type=CodeDatasetSource._get_source_type(),
            source=CodeDatasetSource(dict(source)).to_json(),
            profile=json.dumps(dict(profile)),
        )
        tags = [InputTag(MLFLOW_DATASET_CONTEXT, context)]

        def send() -> None:
            self.client.log_inputs(self.run_id, [DatasetInput(dataset, tags)])

        try:
            self._write(send)
        except Exception:
            # The store looks the dataset up, then inserts it: two trials logging the same new
            # dataset at once both miss it, and the second insert breaks the unique key
            # (sqlite's `UNIQUE constraint failed: datasets...`, PostgreSQL's `dataset_pk`,
            # seen through `mlflow server` by bench.store_writes). Sent again, it finds the
            # winner's row and links it; any other failure fails again and is raised.
            time.sleep(DATASET_RACE_RETRY_S)
            self._write(send)

    def finish(self, status: str) -> None:
        self._write(lambda: self.client.set_terminated(self.run_id, status=status))
