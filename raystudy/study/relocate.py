"""`raystudy relocate`: a study folder that was moved or copied, made to point at itself again.

A study records absolute paths: study.json its folder and, for the default store, the sqlite
file inside it; MLflow's store the folder's `mlartifacts/` (each run's artifact URI, the
experiment's artifact location, each logged model's location). Moved, the study still reads
its old paths, or none. Run in the new place, `relocate` rewrites the old folder's prefix to
the new one in those records: study.json, the sqlite store when it lies in the folder, and
Tune's pickled state in `tune/` (`raystudy.tune.moved_state`: without it, trials that Tune had
not yet created when an interrupted study stopped would write under the old folder on
resume, and an Optuna study into the old folder's database). A study on a tracking server or
a PostgreSQL database keeps its store where it is (the server's artifacts do not move with the
folder), and the command says so. The study's driver lock is held, so nothing writes the
study meanwhile.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path

from raystudy.study.folder import StoreUnavailable, StudyError, StudyInfo
from raystudy.study.lock import driver_lock
from raystudy.tune.moved_state import point_tune_state_at
from raystudy.tune.state import TUNE_DIR

#: MLflow's tables and columns that hold artifact locations (MLflow 3.x;
#: tests/test_finished_study.py checks that a copied study's models load).
ARTIFACT_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
)


@dataclass(frozen=True)
class Relocated:
    study: str
    old: Path
    new: Path
    #: Rows of the sqlite store rewritten, by table.column; empty when the store is elsewhere.
    rows: dict[str, int]
    store_moved: bool
    #: Paths rewritten in Tune's pickled state, by file under tune/.
    tune_files: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        if self.old == self.new:
            return [f"Study {self.study!r} already records {self.new}: nothing to change"]
        out = [f"Study {self.study!r}: {self.old} -> {self.new}"]
        if self.store_moved:
            said = ", ".join(f"{k} {v}" for k, v in self.rows.items() if v) or "no rows"
            out.append(f"  its sqlite store now in the folder; artifact paths rewritten: {said}")
        else:
            out.append(
                "  its store is not in the folder (a server or a database): left as it is; "
                "artifacts it keeps stay where they are"
            )
        if self.tune_files:
            said = ", ".join(f"{k} {v}" for k, v in self.tune_files.items())
            out.append(f"  Tune's saved state pointed at the new folder: {said}")
        return out


def relocate_study(study_dir: Path) -> Relocated:
    """Point `study_dir`'s study.json and its in-folder sqlite store at `study_dir`."""
    new = study_dir.resolve()
    info = StudyInfo.read(new, moved_ok=True)
    old = Path(info.study_dir)
    if old == new:
        return Relocated(info.name, old, new, {}, False)
    with driver_lock(new, "relocate"):
        prefix = f"sqlite:///{old}/"
        store_moved = info.tracking_uri.startswith(prefix)
        rows: dict[str, int] = {}
        uri = info.tracking_uri
        if store_moved:
            database = new / info.tracking_uri.removeprefix(prefix)
            if not database.is_file():
                raise StoreUnavailable(
                    f"{new}: study.json names the store {info.tracking_uri}, in the old folder, "
                    f"but {database} is not here: was the folder copied without it?"
                )
            rows = _rewrite_artifact_paths(database, old, new)
            uri = f"sqlite:///{database}"
        tune_files: dict[str, int] = {}
        if (new / TUNE_DIR).is_dir():
            try:
                tune_files = point_tune_state_at(new / TUNE_DIR, old, new)
            except (OSError, ValueError) as exc:
                where = new / TUNE_DIR
                raise StudyError(f"{where}: cannot point Tune's state here ({exc})") from None
        replace(info, study_dir=new, tracking_uri=uri).write()
    return Relocated(info.name, old, new, rows, store_moved, tune_files)


def _rewrite_artifact_paths(database: Path, old: Path, new: Path) -> dict[str, int]:
    """Replace the old folder's prefix with the new one in MLflow's artifact columns (as
    `file://` URIs and as plain paths), in one transaction."""
    rows: dict[str, int] = {}
    try:
        connection = sqlite3.connect(database)
    except sqlite3.Error as exc:
        raise StudyError(f"{database}: cannot open the study's store ({exc})") from None
    try:
        with connection:  # one transaction: all or nothing
            tables = {r[0] for r in connection.execute("select name from sqlite_master")}
            for table, column in ARTIFACT_COLUMNS:
                if table not in tables:
                    continue
                count = 0
                for before, after in ((f"file://{old}/", f"file://{new}/"), (f"{old}/", f"{new}/")):
                    cursor = connection.execute(
                        f"update {table} set {column} = ? || substr({column}, ?) "
                        f"where substr({column}, 1, ?) = ?",
                        (after, len(before) + 1, len(before), before),
                    )
                    count += cursor.rowcount
                rows[f"{table}.{column}"] = count
    except sqlite3.Error as exc:
        raise StudyError(f"{database}: cannot rewrite the study's store ({exc})") from None
    finally:
        connection.close()
    return rows
