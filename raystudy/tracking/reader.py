"""Reading a study's trial runs back from MLflow, and the record Tune keeps of a trial's run.

`trial_runs` pages through every trial run of a study (MLflow answers 1000 at a time), and
`trial_runs_table` reads them all as one table, the results table analysis starts from.
`RunRecord` is what Tune's storage holds of one finished trial: what `sync.sync_run` needs to
complete its MLflow run when the store was unreachable while the trial ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import mlflow
import pandas as pd
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from raystudy.spec.url_secrets import expand
from raystudy.tags import RESULT_ROLES, ROLE_TAG, TRIAL_RUNS, equals
from raystudy.tracking.environ import env_restored
from raystudy.tracking.retry import check_reachable, reaching

#: MLflow's variable for the process's store.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"


def trial_runs(client: MlflowClient, experiment_id: str, condition: str = "") -> Iterator[Run]:
    """Every trial run of the study matching `condition` (a search filter), page by page."""
    where = TRIAL_RUNS + (f" and {condition}" if condition else "")
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=where, max_results=1000, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


def trial_runs_table(uri: str, experiment_id: str) -> pd.DataFrame:
    """Every trial run of a study, and every external encoder scored beside them (`raystudy
    evaluate --experiment`), as one table (MLflow's `search_runs` frame: `run_id`, `status`,
    `params.*`, `metrics.*` with each metric's latest value, `tags.*`). A server that does
    not answer is `TrackingUnreachable` in seconds, not after MLflow's retries."""
    check_reachable(uri)
    frames = []
    with reaching(uri), _process_store(expand(uri)):
        for role in RESULT_ROLES:  # MLflow's tag filters have no IN
            frame = mlflow.search_runs(
                experiment_ids=[experiment_id],
                filter_string=equals(ROLE_TAG, role),
                output_format="pandas",
            )
            if not frame.empty:
                frames.append(frame)
    if len(frames) < 2:
        return frames[0] if frames else frame
    return pd.concat(frames, ignore_index=True)


@contextlib.contextmanager
def _process_store(uri: str) -> Iterator[None]:
    """`mlflow.search_runs` reads the process's store: set it for the block, then give
    MLFLOW_TRACKING_URI back its value (MLflow's setter also exports it, and a later `raystudy
    run` in this process, or any child process, would take it for the user's)."""
    with env_restored(TRACKING_URI_ENV):
        mlflow.set_tracking_uri(uri)
        yield


@dataclass(frozen=True)
class RunRecord:
    """What Tune's storage holds of one finished trial: enough to complete its MLflow run."""

    trial_id: str
    name: str
    params: Mapping[str, Any]
    tags: Mapping[str, str]
    #: (step, train/* means) in order.
    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    #: The final scores (eval/*, dis/*, down/*, transfer/*), logged at `final_step`.
    final: dict[str, float] = field(default_factory=dict)
    final_step: int = 0
