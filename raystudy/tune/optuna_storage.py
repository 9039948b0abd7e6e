"""The study's Optuna study in its storage: where it lives, whether one of its name is there
already, deleted for a study that starts afresh, and its trials left RUNNING by a killed
driver closed."""

from __future__ import annotations

from pathlib import Path

from raystudy.spec import StudySpec
from raystudy.tune.cluster import TuneSetupError


def optuna_storage_url(spec: StudySpec, study_dir: Path) -> str:
    """Where the study's Optuna study lives: `search.storage`, or optuna.db in its folder."""
    return spec.search.storage or f"sqlite:///{study_dir / 'optuna.db'}"


def optuna_study_exists(url: str, name: str) -> bool:
    """Whether the Optuna storage at `url` holds a study `name`; a sqlite file that does not
    exist holds none (and is not created here)."""
    import optuna
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
        return False
    try:
        return name in optuna.study.get_all_study_names(storage=url)
    except Exception as exc:  # an unreachable server, a file that is no Optuna database
        raise TuneSetupError(
            f"search.storage {url}: cannot read the Optuna storage ({type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:300]})"
        ) from None


def close_orphan_optuna_trials(url: str, name: str) -> int:
    """Fail the trials of Optuna study `name` still RUNNING once every Tune trial has ended:
    asked for a Tune trial that a killed driver never recorded (the resumed study draws a
    new one), they would otherwise look pending for ever. Returns how many were closed."""
    import optuna

    if not optuna_study_exists(url, name):
        return 0
    study = optuna.load_study(study_name=name, storage=url)
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in running:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return len(running)


def clear_optuna_study(url: str, name: str) -> bool:
    """Delete the Optuna study `name` from the storage at `url` (--overwrite: the study
    starts afresh); returns whether there was one."""
    import optuna

    if not optuna_study_exists(url, name):
        return False
    try:
        optuna.delete_study(study_name=name, storage=url)
    except KeyError:  # gone meanwhile
        return False
    return True
