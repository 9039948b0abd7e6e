"""What `raystudy ui` opens: the study's runs table in MLflow's model-training view, showing
the columns a researcher compares (objective, beta, input noise, seed, DCI-D, transfer MAEs).

How MLflow 3.17.2's UI decides this (read in its bundle, mlflow/server/js/build/static/js):

- The view (GenAI or model training) follows the URL's `workflowType=machine_learning`, else
  the browser's last choice (localStorage `mlflow.workflowType`, "genai" at first). The
  experiment tag `mlflow.experimentKind` is what its experiment header writes, but with the
  feature flag this build ships on it no longer picks the view, so the URL carries the choice.
  The tag is still set (`tags.EXPERIMENT_KIND_TAG`): it says what the experiment holds.
- A saved view is the experiment tag `mlflow.sharedViewState.<key>` holding
  `{"name", "createdAt", "updatedAt", "state"}`, `state` being the JSON of the search facets
  (`orderByKey`, `orderByAsc`, ...) and the runs table's UI state (`selectedColumns`,
  `columnOrder`, ...); `#/experiments/<id>/runs?viewStateShareKey=<key>` opens it (the
  experiment's bare route redirects to a tab and drops the key). Columns are named
  ``params.`model.beta` `` and ``metrics.`dis/dci_d` ``.
- Expanded runs are never taken from a saved view (the UI drops `runsExpanded` when it saves
  or opens one), and child runs nest under their parent only while the table is ordered by
  creation time. So the view orders the table by DCI-D instead: every trial run is a row of
  its own, best first, with the study's parent run (which has no DCI-D) last.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from mlflow.tracking import MlflowClient

from raystudy.keys import metric_key, parse_transfer
from raystudy.spec.url_secrets import expand
from raystudy.tags import (
    EXPERIMENT_KIND_TAG,
    MODEL_TRAINING_KIND,
    RUN_NAME_TAG,
    SHARED_VIEW_PREFIX,
)
from raystudy.tracking.reader import trial_runs
from raystudy.tracking.retry import check_reachable, refusing, retry_busy

#: The key of raystudy's view (one per experiment; `raystudy ui` rewrites it each time).
VIEW_KEY = "raystudy"
#: The trial params shown, in this order (a trial's flattened config, `models.params`).
PARAM_COLUMNS = ("model.objective", "model.beta", "train.input_noise", "seed")
#: The disentanglement score the table is ordered by, best (highest) first.
HEADLINE = metric_key("dis", "dci_d")
#: The transfer score shown for each scenario and probe (lower is better).
TRANSFER_SCORE = "mae"
#: MLflow's limit on an experiment tag's value (`MAX_EXPERIMENT_TAG_VAL_LENGTH`), which the UI
#: also keeps a saved view under.
_MAX_VIEW_CHARS = 20_000


def column(kind: str, name: str) -> str:
    """The runs table's name of a column: ``params.`model.beta` ``, ``metrics.`dis/dci_d` ``
    (MLflow's `makeCanonicalSortKey`)."""
    return f"{kind}.`{name}`"


@dataclass(frozen=True)
class StudyView:
    """The view `raystudy ui` wrote: its columns, ordering and the URL that opens it."""

    experiment_id: str
    #: Table columns, in order (`column`).
    columns: list[str]
    order_by: str
    ascending: bool
    key: str = VIEW_KEY

    def url(self, port: int, host: str = "127.0.0.1") -> str:
        """The runs table of the study, in the model-training view, with this view open."""
        return self.url_at(f"http://{host}:{port}")

    def url_at(self, base: str) -> str:
        """`url` on the UI served at `base` (a tracking server's own URL)."""
        return (
            f"{base.rstrip('/')}/#/experiments/{self.experiment_id}/runs"
            f"?workflowType=machine_learning&viewStateShareKey={self.key}"
        )

    def state(self) -> dict[str, object]:
        """The saved view's `state`: search facets and runs-table UI state, as the UI saves it."""
        return {
            "orderByKey": self.order_by,
            "orderByAsc": self.ascending,
            "selectedColumns": self.columns,
            "columnOrder": self.columns,
        }


def study_columns(params: Iterable[str], metrics: Iterable[str]) -> list[str]:
    """The columns of `PARAM_COLUMNS`, `HEADLINE` and the transfer MAEs
    (`transfer/<scenario>/<probe>/mae`, per scenario and probe) that some run logged."""
    params, metrics = set(params), set(metrics)
    columns = [column("params", p) for p in PARAM_COLUMNS if p in params]
    if HEADLINE in metrics:
        columns.append(column("metrics", HEADLINE))
    transfer = []
    for key in metrics:
        parts = parse_transfer(key)
        if parts is not None and parts.score == TRANSFER_SCORE and parts.factor is None:
            transfer.append(key)
    return columns + [column("metrics", k) for k in sorted(transfer)]


def study_view(experiment_id: str, params: Iterable[str], metrics: Iterable[str]) -> StudyView:
    """The view of a study whose trial runs logged these params and metrics: ordered by
    `HEADLINE` (highest first), else by the first transfer MAE (lowest first), else by run
    name; any of these lists every run flat (see the module's docstring)."""
    columns = study_columns(params, metrics)
    scores = [c for c in columns if c.startswith("metrics.")]
    if scores:
        headline = scores[0] == column("metrics", HEADLINE)
        return StudyView(experiment_id, columns, scores[0], ascending=not headline)
    return StudyView(experiment_id, columns, column("tags", RUN_NAME_TAG), ascending=True)


def _envelope(view: StudyView, name: str) -> tuple[StudyView, str]:
    """The tag's value, as the UI's "Save as new view" writes it (its state not compressed,
    which the UI reads as well), and the view it holds: columns are dropped from the end
    (transfer MAEs) while it is over the tag limit, which only a study of hundreds of
    scenario-probe pairs gets near."""
    now = int(time.time() * 1000)
    while True:
        state = json.dumps(view.state(), separators=(",", ":"))
        value = json.dumps({"name": name, "createdAt": now, "updatedAt": now, "state": state})
        if len(value) <= _MAX_VIEW_CHARS or not view.columns:
            return view, value
        view = dataclasses.replace(view, columns=view.columns[:-1])


def _logged_keys(client: MlflowClient, experiment_id: str) -> tuple[set[str], set[str]]:
    """The param and metric keys the study's trial runs logged so far."""
    params: set[str] = set()
    metrics: set[str] = set()
    for run in trial_runs(client, experiment_id):
        params.update(run.data.params)
        metrics.update(run.data.metrics)
    return params, metrics


def write_study_view(uri: str, experiment_id: str, study: str) -> StudyView:
    """Mark the study's experiment as model training and (re)write raystudy's view of its runs
    table from the runs logged so far; returns it (`StudyView.url` opens it). Raises
    `TrackingUnreachable` or `TrackingRejected` naming the store."""
    with refusing(uri):
        check_reachable(uri)
        client = MlflowClient(expand(uri))  # refuses a URI MLflow does not support
        params, metrics = _logged_keys(client, experiment_id)
        view, value = _envelope(study_view(experiment_id, params, metrics), f"raystudy: {study}")
        for key, tag in ((EXPERIMENT_KIND_TAG, MODEL_TRAINING_KIND), (view_tag(view.key), value)):
            retry_busy(lambda key=key, tag=tag: client.set_experiment_tag(experiment_id, key, tag))
    return view


def view_tag(key: str) -> str:
    """The experiment tag holding the saved view `key`: `mlflow.sharedViewState.<key>`."""
    return SHARED_VIEW_PREFIX + key
