"""`raystudy ui`: a study's runs in MLflow's UI, with the columns a researcher compares.

`study_ui` writes the study's view (`tracking.ui_view`) and says where to open it. A study in
a local store gets an `mlflow ui` of its own, bound to 127.0.0.1 (`serve`); a study on a
tracking server is opened on that server, which serves its UI itself (MLflow cannot serve a
UI over another server): nothing is started. The store reaches `mlflow ui` through its
environment, never its arguments: any user's `ps` shows argv, and a ${VAR} in the URI is a
password once expanded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from raystudy.spec.url_secrets import expand
from raystudy.study.folder import StudyInfo, study_path
from raystudy.tracking.ui_view import StudyView, write_study_view

#: The address `mlflow ui` is bound to, and its port unless told otherwise.
LOOPBACK, DEFAULT_PORT = "127.0.0.1", 5000


@dataclass(frozen=True)
class StudyUI:
    """Where a study's runs are shown: `server` is the tracking server's address (no user or
    password) when the study is on one, else None and the UI is `mlflow ui` on `port`."""

    name: str
    tracking_uri: str
    view: StudyView
    port: int
    server: str | None = None
    server_path: str = ""

    def lines(self) -> list[str]:
        """What `raystudy ui` says: where the UI is and the URL of the runs in their view."""
        if self.server is not None:
            where = f"The runs of {self.name!r} are on the MLflow server at {self.server}"
            url = self.view.url_at(self.server + self.server_path)
            return [f"{where}, which serves", f"their UI; the view with their columns: {url}"]
        return [
            f"MLflow UI for {self.name!r} on http://{LOOPBACK}:{self.port} (Ctrl-C stops it); "
            "its runs:",
            f"  {self.view.url(self.port)}",
        ]

    def command(self) -> list[str]:
        """`mlflow ui` on loopback and `port`; the store is in `environment()`."""
        return [sys.executable, "-m", "mlflow", "ui", "--host", LOOPBACK, "--port", f"{self.port}"]

    def environment(self) -> dict[str, str]:
        """This process's environment, with the study's store (expanded) for `mlflow ui`."""
        # MLflow 3 also starts a job runner for its GenAI jobs (7 huey processes, most of a
        # core while they start), which a study never submits.
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        env["MLFLOW_BACKEND_STORE_URI"] = expand(self.tracking_uri)
        return env


def study_ui(output: str | Path, name: str, port: int = DEFAULT_PORT) -> StudyUI:
    """Write the view of the study `name` under `output` to its store and say where it is
    shown. StudyError for a folder that holds no readable study; TrackingUnreachable or
    TrackingRejected naming a store that cannot be read or lacks the study."""
    info = StudyInfo.read(study_path(output, name))
    view = write_study_view(info.tracking_uri, info.experiment_id, info.name)
    if not info.tracking_uri.startswith(("http://", "https://")):
        return StudyUI(name, info.tracking_uri, view, port)
    parts = urlsplit(expand(info.tracking_uri))  # the address alone: no user, no password
    base = f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
    return StudyUI(name, info.tracking_uri, view, port, server=base, server_path=parts.path)


def serve(ui: StudyUI) -> int:
    """Run `mlflow ui` on the study's local store until it stops (Ctrl-C); its exit code.
    0 at once for a study on a tracking server, whose own UI shows it."""
    if ui.server is not None:
        return 0
    return subprocess.call(ui.command(), env=ui.environment())
