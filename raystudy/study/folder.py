"""A study's folder: where it lives, what `study.json` records, and its resolved spec.

Everything a study writes lives under `<output>/<name>/`: Tune's state (`tune/`), the MLflow
store (`mlflow.db`, `mlartifacts/`) unless the spec names another, the resolved spec
(`spec.yaml`) and `study.json`, which tells `analyze`, `status` and a later `resume` where the
results are. This module reads and writes those without Ray or MLflow, so that every reader of
a study can import it without the driver.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from raystudy.spec import StudySpec
from raystudy.tune.state import TUNE_DIR

STUDY_FILE = "study.json"
SPEC_FILE = "spec.yaml"


class StudyError(RuntimeError):
    """A study that cannot start (or finish); the message says why and what to do."""

    #: The command's exit status for it (docs/studies/commands.md): 2, a mistake in what
    #: was given (a spec, an option, a folder); the subclasses below have their own.
    exit_code = 2


class StudyNotFound(StudyError):
    """No study of that name under --output."""

    exit_code = 3


class StoreUnavailable(StudyError):
    """The study's MLflow store cannot be reached, refuses it, or is gone."""

    exit_code = 4


class ClusterUnavailable(StudyError):
    """Ray cannot be joined or started as asked, or no node can hold a trial."""

    exit_code = 5


class StudyBusy(StudyError):
    """Another driver (`run`, `resume`, `rescore`) holds the study."""

    exit_code = 6


@dataclass(frozen=True)
class StudyInfo:
    """What `study.json` records: enough to find a study's results again."""

    name: str
    study_dir: Path
    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    #: Tune trials (what `status` counts); with seeds_per_trial each trains several models.
    #: (`num_trials` in study.json files written before it was named so.)
    num_tune_trials: int
    #: Models, i.e. MLflow trial runs (the spec's `num_trials()`); None in studies written
    #: before it existed: num_tune_trials.
    num_models: int | None = None

    @property
    def models(self) -> int:
        return self.num_tune_trials if self.num_models is None else self.num_models

    def write(self) -> None:
        data = {**self.__dict__, "study_dir": str(self.study_dir)}
        # Rewritten while `status`/`analyze` may read it: a reader must never see half a file.
        path = self.study_dir / STUDY_FILE
        partial = path.with_name(f".{STUDY_FILE}.partial-{os.getpid()}")
        partial.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(partial, path)

    @classmethod
    def read(cls, study_dir: Path, moved_ok: bool = False) -> StudyInfo:
        """The study.json of `study_dir`. A folder moved or copied away from the one it
        records, with its sqlite store inside, is a StudyError naming `raystudy relocate`
        (read as it is, it would report the old folder's store, or an empty new one);
        `moved_ok` reads it anyway (`relocate` itself)."""
        path = study_dir / STUDY_FILE
        if not path.is_file():
            raise StudyNotFound(
                f"{study_dir} is not a raystudy study (no {STUDY_FILE}); "
                f"`raystudy run SPEC --output {study_dir.parent}` creates one"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StudyError(
                f"{path}: the file is not valid JSON ({exc.msg}, line {exc.lineno} column "
                f"{exc.colno}); it records where the study's results are: restore it, or run "
                "the study again with --overwrite"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StudyError(f"{path}: cannot read the file ({exc})") from None
        if not isinstance(data, dict):
            raise StudyError(
                f"{path}: must hold a JSON object with the fields {', '.join(_INFO_TYPES)}, "
                f"got a JSON {type(data).__name__}"
            )
        # field -> the key the file holds it under: an older file's name stands for a field.
        names = {k: k for k in data}
        names.update({new: old for old, new in _RENAMED.items() if old in data and new not in data})
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.name not in names
        ]
        if required:
            raise StudyError(
                f"{path}: lacks {', '.join(required)}; it was not written by raystudy (or was "
                "cut short): restore it, or run the study again with --overwrite"
            )
        for field, (kinds, what) in _INFO_TYPES.items():
            key = names.get(field)  # as the file names it
            value = data.get(key)
            # bool is an int to Python, never a count to a study.
            if key is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
                raise StudyError(f"{path}: {key} must be {what}, got {value!r}")
        # Keys this version does not know are left out, not refused: study.json has gained
        # fields before (num_models), and a study written by a newer raystudy should still be
        # readable here; everything this version needs was checked above.
        known = {field: data[key] for field, key in names.items() if field in _INFO_TYPES}
        info = cls(**{**known, "study_dir": Path(data["study_dir"])})
        here = study_dir.resolve()
        inside = info.tracking_uri.startswith(f"sqlite:///{info.study_dir}/")
        if not moved_ok and inside and info.study_dir.resolve() != here:
            raise StudyError(
                f"{path} records the folder {info.study_dir}, and its store in it, but this is "
                f"{here}: the study was moved or copied. `raystudy relocate {here.name} "
                f"--output {here.parent}` points it here"
            )
        return info


#: study.json's fields: the JSON types each may have, and how a message names them.
_INFO_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "study_dir": ((str,), "a string (a folder)"),
    "tracking_uri": ((str,), "a string (an MLflow tracking URI)"),
    "experiment_id": ((str,), "a string (an MLflow experiment id)"),
    "parent_run_id": ((str,), "a string (an MLflow run id)"),
    "num_tune_trials": ((int,), "an integer"),
    "num_models": ((int, type(None)), "an integer or null"),
}
#: study.json keys of older raystudy versions: old name -> field.
_RENAMED = {"num_trials": "num_tune_trials"}


def study_path(output: str | Path, name: str) -> Path:
    """The folder of the study `name` under `output` (absolute): where every command looks
    for it, and where `run` creates it."""
    return (Path(output) / name).resolve()


def check_store(info: StudyInfo) -> None:
    """StudyError when the study's sqlite store is missing: MLflow would silently create an
    empty one there and report no runs."""
    store = info.tracking_uri.removeprefix("sqlite:///")
    if info.tracking_uri.startswith("sqlite:///") and not Path(store).is_file():
        raise StoreUnavailable(
            f"the MLflow store of study {info.name!r} is missing: {store} (study.json records "
            "absolute paths: was the study folder moved or copied? `raystudy relocate` in its "
            "new place points it there)"
        )


def check_study_dir(output: Path, name: str, overwrite: bool) -> Path:
    """Where the study will live, checked without writing anything: StudyError when --output
    cannot hold it, or a study is there already and `overwrite` is not set."""
    study_dir = study_path(output, name)
    try:
        # The nearest folder that exists is where this study's folders will be made.
        existing = study_dir
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise StudyError(
                f"--output {output}: {existing} is a file, not a folder; name a folder (it is "
                "created if missing)"
            )
        occupied = existing == study_dir and any(study_dir.iterdir())
    except OSError as exc:  # a folder on the way that this user may not look into
        raise StudyError(
            f"--output {output}: cannot read {exc.filename or study_dir} ({exc.strerror})"
        ) from None
    # --overwrite deletes a study, never a folder of something else that shares its name.
    is_study = (study_dir / STUDY_FILE).is_file() or (study_dir / SPEC_FILE).is_file()
    if occupied and overwrite and not is_study:
        raise StudyError(
            f"{study_dir} is not empty and holds no raystudy study (no {STUDY_FILE} or "
            f"{SPEC_FILE}): --overwrite deletes only a study's folder; move its files away, "
            "or pass --output to write elsewhere"
        )
    if occupied and not overwrite:
        what = (
            f"already holds a study named {name!r}"
            if (study_dir / STUDY_FILE).is_file()
            else "is not empty (and holds no raystudy study)"
        )
        raise StudyError(
            f"{study_dir} {what}; pass --overwrite to delete it and start again, "
            f"`raystudy resume {name}` to finish it, or --output to write elsewhere"
        )
    # Permissions alone do not tell (root, read-only mounts, /proc): try, and leave nothing.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".raystudy-", dir=existing))
    except OSError as exc:
        raise StudyError(
            f"--output {output}: cannot create folders in {existing} ({exc.strerror or exc}); "
            "name a folder you can write to"
        ) from None
    return study_dir


def make_study_dir(study_dir: Path, overwrite: bool) -> Path | None:
    """Create the study folder checked by `check_study_dir`, deleting the study in it first
    when `overwrite`. Returns the topmost folder this made (what to remove if the study
    fails while starting), or None when the (empty) study folder existed already."""
    if overwrite and study_dir.is_dir():
        shutil.rmtree(study_dir)
    made = None
    for folder in (study_dir, *study_dir.parents):
        if folder.exists():
            break
        made = folder
    study_dir.mkdir(parents=True, exist_ok=True)
    return made


def remove_new(study_dir: Path, made: Path | None) -> None:
    """Undo `make_study_dir` and what was written since, so a failed start blocks no rerun.
    The study folder was new or empty when this attempt began: nothing in it is older."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        return
    for child in study_dir.iterdir() if study_dir.is_dir() else ():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def load_study_spec(study_dir: Path, check_data: bool = False) -> StudySpec:
    """The study's resolved spec. Reading results needs no dataset file, so the data are
    checked only on request (`resume`, which runs trials); a spec that no longer validates
    is a StudyError saying so."""
    from raystudy.checks import load_spec
    from raystudy.spec import SpecError

    try:
        return load_spec(study_dir / SPEC_FILE, check_data=check_data)
    except SpecError as exc:
        raise StudyError(f"{exc}\n(the study's spec.yaml no longer validates)") from None


def tune_dir_of(study_dir: Path) -> Path:
    """The study's Tune storage; StudyError when there is none to read."""
    tune_dir = study_dir / TUNE_DIR
    if not tune_dir.is_dir():
        raise StudyError(
            f"{tune_dir} does not exist: the study {study_dir.name!r} has no Tune storage to "
            "read (it stopped before its first trial started)"
        )
    return tune_dir
