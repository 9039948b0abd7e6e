"""Every MLflow tag name raystudy writes or reads, the values it gives some of them, and the
run statuses it sets and reads, in one place.

Trials, the study driver and the analysis all meet on these names (a trial tags its run, the
driver finds it again by them, the results table reads them as `tags.<name>` columns), so a
name typed twice could drift between writer and reader. Import the constant; never type the
string (`tests/test_contracts.py` fails on one typed outside this module). This module
imports nothing.
"""

from __future__ import annotations

# --- Tags MLflow itself defines (raystudy sets or reads them) ---------------------------------
#: The study's parent run, on each trial run (shows trials nested under the study in the UI).
PARENT_TAG = "mlflow.parentRunId"
#: A run's display name (`run_name=` when it is created).
RUN_NAME_TAG = "mlflow.runName"

# --- Experiment tags MLflow's UI reads ---------------------------------------------------------
#: The experiment's kind, as MLflow's UI writes it from its experiment header; a study's
#: experiment is `MODEL_TRAINING_KIND` ("Machine learning" there, not "GenAI apps & agents").
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING_KIND = "custom_model_development"
#: Prefix of a saved view of the runs table (`mlflow.sharedViewState.<key>`), which the UI
#: opens from `#/experiments/<id>/runs?viewStateShareKey=<key>`.
SHARED_VIEW_PREFIX = "mlflow.sharedViewState."
#: The tags a study's experiment is created with.
EXPERIMENT_TAGS = {EXPERIMENT_KIND_TAG: MODEL_TRAINING_KIND}

# --- Identity: which study and trial a run belongs to -----------------------------------------
#: Ray Tune's trial id (`<id>/<member>` for a stacked model), by which a retried or restored
#: trial finds its run again.
TRIAL_ID_TAG = "ray_trial_id"
#: Whether a run is the study's parent run or a trial's; values `STUDY_ROLE`, `TRIAL_ROLE`.
ROLE_TAG = "raystudy.role"
STUDY_ROLE = "study"
TRIAL_ROLE = "trial"
#: An encoder raystudy did not train, scored by `raystudy evaluate --experiment` beside a
#: study's trials (the analysis reads it as a group of its own).
EXTERNAL_ROLE = "external"
#: The study's name, on its parent and trial runs.
STUDY_TAG = "raystudy.study"
#: The raystudy version that ran the study (parent run) or trial.
VERSION_TAG = "raystudy.version"
#: On each model run of a stacked trial: the Tune trial id its models trained in together.
STACK_TAG = "raystudy.stack"
#: A trial's split: a built-in split's name, or "custom" for one written in the spec.
SPLIT_TAG = "split"
#: Where a trial ran (Ray node id, GPU ids).
NODE_TAG = "ray.node_id"
GPU_IDS_TAG = "ray.gpu_ids"

# --- Lineage: what a trial ran with (`raystudy.lineage`), set when its run opens ------------
#: MLflow's own tag for the source commit (the UI shows it on the run page): the commit of the
#: raystudy checkout the trial imported, "unknown" for a package installed from a wheel.
GIT_COMMIT_TAG = "mlflow.source.git.commit"
#: MLflow's own tag for what ran (`SOURCE_NAME`): without it the run page shows no Source, and
#: so no commit either.
SOURCE_NAME_TAG = "mlflow.source.name"
SOURCE_NAME = "raystudy"
#: "true" when tracked files differed from that commit, "false", or "unknown".
GIT_DIRTY_TAG = "raystudy.git_dirty"
#: The device the trial trained on: the GPU's name, or the CPU's model.
DEVICE_TAG = "raystudy.device"
#: Prefix of the version tags: `raystudy.versions.torch`, `raystudy.versions.python`, ...
VERSIONS_PREFIX = "raystudy.versions."
#: Prefix of the tags saying how each probe a run scored was computed:
#: `raystudy.probe.mlp` = "sklearn MLPRegressor float64 on cpu", "torch batched float32 on
#: cuda:0", ... (`raystudy.metrics.probes.probe_implementation`).
PROBE_PREFIX = "raystudy.probe."
#: Set when the lineage could not be recorded (the trial itself went on).
LINEAGE_ERROR_TAG = "raystudy.lineage_error"


def version_tag(package: str) -> str:
    """The tag holding a package's version: `torch` -> `raystudy.versions.torch`."""
    return VERSIONS_PREFIX + package


def probe_tag(probe: str) -> str:
    """The tag saying how a probe was computed: `mlp` -> `raystudy.probe.mlp`."""
    return PROBE_PREFIX + probe


# --- Outcome: how a trial ended ---------------------------------------------------------------
#: A failed trial's error, `<ExceptionType>: <message>`.
ERROR_TAG = "raystudy.error"
#: A retried or resumed trial's earlier error, moved here from `ERROR_TAG` when its run is
#: reopened: a run that then finishes carries no error, and the failure stays on record.
EARLIER_ERROR_TAG = "raystudy.error_before_retry"
#: Figures a trained and evaluated trial could not draw (the trial itself did not fail).
ARTIFACT_ERROR_TAG = "raystudy.artifact_error"
#: A trained trial whose encoder was not logged as an MLflow model, and why (gt_decoder has
#: none; a failed upload). The trial itself did not fail.
MODEL_ERROR_TAG = "raystudy.model_error"
#: On a trial run: the `models:/<id>` URI of its logged encoder (`runs:/<run id>/model` loads
#: it too). On an external run: the encoder that was scored (`runs:/...`, `module:function`).
MODEL_TAG = "raystudy.model"
#: On a trial run: the metrics and probes `raystudy rescore` has added to it, as a JSON list of
#: "metric:<name>" / "probe:<name>", written after their scores (a rescore killed before it
#: leaves the run to be scored again).
RESCORED_TAG = "raystudy.rescored"
#: Scores a trained trial left out because the codes they read held NaN or inf, and why
#: (`<keys>: codes of N of M images are NaN or inf (dimension(s) [...])`; parts joined by
#: "; "). The trial itself finished; its other scores are valid.
INVALID_SCORES_TAG = "raystudy.invalid_scores"
#: On a trial run that resumed from an older checkpoint because the newest was unreadable:
#: which was skipped, why, and which was read (`raystudy.tune.checkpoints`).
CHECKPOINT_FALLBACK_TAG = "raystudy.checkpoint_fallback"
#: On a trial run that ran past `execution.trial_time_limit_s`: the limit, in seconds.
TIMED_OUT_TAG = "raystudy.timed_out_after_s"
#: The step at which a diverged trial's loss was found non-finite.
DIVERGED_TAG = "raystudy.diverged_at_step"
#: On runs of trials the scheduler stopped on purpose; the value names the scheduler.
STOPPED_TAG = "raystudy.stopped_by"
#: `STOPPED_TAG`'s value: ASHA is the only scheduler a spec can name (a trial that returns
#: has always reported its scores).
BY_ASHA = "asha"
#: Set on a trial run the driver closed at the study's end (its trial never did).
CLOSED_TAG = "raystudy.closed_by"
#: `CLOSED_TAG`'s value.
AT_STUDY_END = "study_end"
#: On a run (re)written from Tune's storage because the store was unreachable when it ran.
SYNCED_TAG = "raystudy.synced_from"
#: On a row of the results table read from Tune's storage rather than from MLflow.
SOURCE_TAG = "raystudy.source"
#: `SYNCED_TAG`'s and `SOURCE_TAG`'s value: what Tune's storage recorded.
FROM_TUNE = "tune"
#: The values raystudy gives tags, but for the roles' and the source name's: those are ordinary
#: words (study, trial, raystudy), which other vocabularies use too.
TAG_VALUES = (MODEL_TRAINING_KIND, BY_ASHA, AT_STUDY_END, FROM_TUNE)

# --- Run statuses: MLflow's names (`mlflow.entities.RunStatus`) ---------------------------
# (Named RUN_*: Tune's trial outcomes, `raystudy.tune.state`, share two of these words.)
RUN_RUNNING = "RUNNING"
RUN_FINISHED = "FINISHED"
RUN_FAILED = "FAILED"
#: A run cut short: Tune or Ctrl-C stopped its trial, or the study's end closed it.
RUN_KILLED = "KILLED"
RUN_STATUSES = (RUN_RUNNING, RUN_FINISHED, RUN_FAILED, RUN_KILLED)


def column(tag: str) -> str:
    """The results-table column of a tag: `raystudy.error` -> `tags.raystudy.error`."""
    return f"tags.{tag}"


def equals(tag: str, value: str) -> str:
    """An MLflow `search_runs` filter on one tag: tags.`raystudy.role` = 'trial'."""
    return f"tags.`{tag}` = '{value}'"


def status_is(status: str) -> str:
    """An MLflow `search_runs` filter on the run status: attributes.status = 'RUNNING'."""
    return f"attributes.status = '{status}'"


#: The `search_runs` filter that finds a study's trial runs (not its parent run).
TRIAL_RUNS = equals(ROLE_TAG, TRIAL_ROLE)
#: The roles of the runs a study's results table holds: its trials, and external encoders.
RESULT_ROLES = (TRIAL_ROLE, EXTERNAL_ROLE)
