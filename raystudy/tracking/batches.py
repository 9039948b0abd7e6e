"""Writes MLflow takes in one request: metrics and params in chunks of the sizes one
`log_batch` accepts, each chunk retried on its own while the store is busy."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from raystudy.tracking.retry import retry_busy

# MLflow caps one log_batch call at 1000 metrics / 100 params.
MAX_METRICS, MAX_PARAMS = 1000, 100


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def log_metrics(client: MlflowClient, run_id: str, metrics: Mapping[str, float], step: int) -> None:
    now = int(time.time() * 1000)
    log_entries(client, run_id, [Metric(k, float(v), now, step) for k, v in metrics.items()])


def log_entries(client: MlflowClient, run_id: str, entries: list[Metric]) -> None:
    """In batches MLflow accepts, each retried on its own while the store is busy (a batch
    that failed was rolled back; one that succeeded is not sent again)."""
    for chunk in chunks(entries, MAX_METRICS):
        retry_busy(lambda chunk=chunk: client.log_batch(run_id, metrics=chunk))
