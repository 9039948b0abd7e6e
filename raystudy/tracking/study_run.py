"""The study's run in MLflow, from the driver's side (`StudyTracker`): the experiment and the
study's parent run, created before any trial runs, and what the driver records on them when the
study ends (see `raystudy.tracking.trial_run` for the trials' own runs).

One experiment per study, one parent run for the study, one run per trial.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from mlflow.tracking import MlflowClient

from raystudy.spec.url_secrets import expand
from raystudy.tags import (
    AT_STUDY_END,
    CLOSED_TAG,
    EXPERIMENT_TAGS,
    ROLE_TAG,
    RUN_KILLED,
    RUN_RUNNING,
    STUDY_ROLE,
    STUDY_TAG,
    TRIAL_ID_TAG,
    status_is,
)
from raystudy.tracking.batches import log_metrics
from raystudy.tracking.reader import trial_runs
from raystudy.tracking.retry import (
    TrackingRejected,
    check_reachable,
    reaching,
    refusing,
    shown,
)
from raystudy.tracking.trial_index import ensure_trial_id_index


def default_uri(study_dir: Path) -> str:
    """An absolute sqlite URI: trials run in other working directories, so no relative path."""
    return f"sqlite:///{(study_dir / 'mlflow.db').resolve()}"


class StudyTracker:
    """Driver side: the experiment and the study's parent run, created before any trial runs.

    Creating them here, once, matters: a fresh sqlite store hit by several trial processes at
    once fails its schema migration, and `set_experiment` under concurrency misfiles runs.
    """

    def __init__(self, uri: str, experiment_id: str, parent_run_id: str) -> None:
        self.uri, self.experiment_id, self.parent_run_id = uri, experiment_id, parent_run_id
        self.client = MlflowClient(expand(uri))

    @classmethod
    def attach(cls, uri: str, experiment_id: str, parent_run_id: str) -> StudyTracker:
        """The tracker of an existing study, found by reading only (`resume`): raises
        `TrackingUnreachable` or `TrackingRejected` before anything else starts."""
        with refusing(uri):
            check_reachable(uri)
            tracker = cls(uri, experiment_id, parent_run_id)
        ensure_trial_id_index(uri)  # a study started before raystudy made it
        return tracker

    @staticmethod
    def check(uri: str, study: str) -> None:
        """Whether `start` can work, by reading only: MLflow supports the URI, the store
        answers, and no deleted experiment holds the study's name (MLflow keeps deleted
        names, and refuses new runs in them). Raises `TrackingUnreachable` or
        `TrackingRejected`; writes nothing (a fresh sqlite store gets its tables)."""
        with refusing(uri):
            check_reachable(uri)
            experiment = MlflowClient(expand(uri)).get_experiment_by_name(study)
        if experiment is not None and experiment.lifecycle_stage == "deleted":
            # The commands are for pasting into a shell: never with the store's password.
            safe = shown(uri)
            raise TrackingRejected(
                f"tracking.uri {safe!r}: its experiment {study!r} is deleted, and MLflow keeps "
                f"the name; restore it (`MLFLOW_TRACKING_URI={safe} mlflow experiments restore "
                f"--experiment-id {experiment.experiment_id}`), delete it for good (`mlflow gc "
                f"--backend-store-uri {safe}`), or give the study another name"
            )

    @classmethod
    def start(
        cls, uri: str, study: str, artifact_dir: Path, tags: Mapping[str, str]
    ) -> StudyTracker:
        """The study's experiment (created if new) and a new parent run in it. Raises
        `TrackingUnreachable` or `TrackingRejected`."""
        with refusing(uri):
            check_reachable(uri)
            return cls._start(uri, study, artifact_dir, tags)

    @classmethod
    def _start(
        cls, uri: str, study: str, artifact_dir: Path, tags: Mapping[str, str]
    ) -> StudyTracker:
        client = MlflowClient(expand(uri))
        experiment = client.get_experiment_by_name(study)
        if experiment is None:
            # A store without a server (sqlite, file, a database such as PostgreSQL) keeps
            # artifacts in the study folder (MLflow's default, ./mlruns, would be each trial
            # process's working folder); a tracking server decides itself (it usually proxies
            # them to its own artifact store).
            local = not uri.startswith(("http://", "https://", "databricks"))
            experiment_id = client.create_experiment(
                study,
                artifact_location=artifact_dir.resolve().as_uri() if local else None,
                tags=dict(EXPERIMENT_TAGS),
            )
        else:
            experiment_id = experiment.experiment_id
        run = client.create_run(
            experiment_id,
            run_name=study,
            tags={ROLE_TAG: STUDY_ROLE, STUDY_TAG: study, **tags},
        )
        ensure_trial_id_index(uri)  # MLflow's tables exist now
        return cls(uri, experiment_id, run.info.run_id)

    def reopen(self) -> None:
        """Mark the parent run running again (a resumed study)."""
        check_reachable(self.uri)
        with reaching(self.uri):
            self.client.update_run(self.parent_run_id, status=RUN_RUNNING)

    def log_artifact(self, path: Path) -> None:
        with refusing(self.uri):
            self.client.log_artifact(self.parent_run_id, str(path))

    def discard(self) -> None:
        """Delete the parent run of a study that failed while starting: it ran nothing, and
        left in place it would read as a study in the MLflow UI. Best effort: the error that
        stopped the study is what the user needs to see."""
        with contextlib.suppress(Exception):
            self.client.delete_run(self.parent_run_id)

    def log_analysis(self, files: list[Path], artifact_path: str = "analysis") -> None:
        """The files of `raystudy analyze` on the parent run; a later analysis replaces them."""
        with reaching(self.uri):
            for path in files:
                self.client.log_artifact(self.parent_run_id, str(path), artifact_path)

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        with reaching(self.uri):
            log_metrics(self.client, self.parent_run_id, metrics, step=0)

    def finish(self, status: str) -> None:
        with reaching(self.uri):
            self.client.set_terminated(self.parent_run_id, status=status)

    def close_running_trials(self) -> int:
        """Mark KILLED every trial run still RUNNING; returns how many.

        Called once Tune has stopped every trial: a run still open then belongs to a trial
        whose process ended without closing it (a scheduler stopped it while it was busy
        evaluating, or its worker was killed), and would otherwise read as running forever.
        """
        closed = 0
        with reaching(self.uri):
            # Listed in full first: closing a run takes it out of the filter being paged.
            for run in list(trial_runs(self.client, self.experiment_id, status_is(RUN_RUNNING))):
                self.client.set_tag(run.info.run_id, CLOSED_TAG, AT_STUDY_END)
                self.client.set_terminated(run.info.run_id, status=RUN_KILLED)
                closed += 1
        return closed

    def tag_killed_trials(self, trial_ids: Iterable[str], tag: str, value: str) -> int:
        """Set `tag`=`value` on the KILLED trial runs of the Tune trials `trial_ids` (a
        stacked trial's runs are `<trial id>/<model>`); returns how many were tagged.

        The study marks this way the trials its scheduler stopped, which would otherwise read
        like runs a Ctrl-C or a lost worker cut short.
        """
        wanted = set(trial_ids)
        if not wanted:
            return 0
        tagged = 0
        with reaching(self.uri):
            for run in trial_runs(self.client, self.experiment_id, status_is(RUN_KILLED)):
                trial_id = run.data.tags.get(TRIAL_ID_TAG, "").split("/", 1)[0]
                if trial_id in wanted and run.data.tags.get(tag) != value:
                    self.client.set_tag(run.info.run_id, tag, value)
                    tagged += 1
        return tagged

    def trial_statuses(self) -> dict[str, str]:
        """Run name (= Tune trial name) -> MLflow status of every trial run (all pages)."""
        with reaching(self.uri):
            return {
                run.info.run_name: run.info.status
                for run in trial_runs(
                    self.client,
                    self.experiment_id,
                )
            }
