"""Reading a study's trial runs back from MLflow, and the record Tune keeps of a trial's run.

`trial_runs` pages through every trial run of a study (MLflow answers 1000 at a time).
`RunRecord` is what Tune's storage holds of one finished trial: what `writer.sync_run` needs to
complete its MLflow run when the store was unreachable while the trial ran.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from raystudy.tags import TRIAL_RUNS


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
