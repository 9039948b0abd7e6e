"""The one reader of what Ray Tune saved of a study, and the one rule for what became of a trial.

Tune keeps, under `<study>/tune/`, an experiment state (each trial's Tune status and last
result) and a folder per trial: `result.json` (one JSON object per report), `params.json` (the
trial's Tune config: a grid point index, or an Optuna draw) and `error.txt` (its last error).
They are read here as plain JSON, never the pickled parts, without Ray.

What became of a trial is said in one vocabulary, by one rule (`trial_outcome`), whether it is read
from a finished `tuner.fit()` or from disk: FINISHED (it reported its final scores), STOPPED
(the scheduler, ASHA, stopped it before them: done, never resumed), UNFINISHED (cut short
otherwise, by Ctrl-C or a time budget: what `resume` continues), ERROR, or Tune's own word for
a trial it still counts as live (RUNNING, PENDING, PAUSED). Tune itself says TERMINATED for the
first three alike; that word is never shown.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raystudy.keys import DIVERGED_KEY, EVALUATED, FINAL_PREFIXES, STACK_KEYS, TRAIN
from raystudy.tags import RUN_FAILED, RUN_FINISHED, RUN_KILLED, RUN_RUNNING

#: The folder of a study that Tune's storage is in (`RunConfig.name`).
TUNE_DIR = "tune"

FINISHED = "FINISHED"
STOPPED = "STOPPED"
UNFINISHED = "UNFINISHED"
ERROR = "ERROR"
RUNNING = "RUNNING"
PENDING = "PENDING"
PAUSED = "PAUSED"
#: Every outcome, in the order counts of them are shown.
OUTCOMES = (FINISHED, STOPPED, UNFINISHED, RUNNING, ERROR, PENDING, PAUSED)
#: Tune's statuses of a trial it still counts as live (a killed driver leaves them so).
_LIVE = (RUNNING, PENDING, PAUSED)
#: Tune's status of every trial it ended, however it ended (`trial_outcome` tells them apart).
_TERMINATED = "TERMINATED"
#: Tune's flag on a trial's last result when a scheduler or stopper ended it (and on the
#: last result of a trial whose function returned).
_DONE = "done"
#: The MLflow status a model's run has (or, read from Tune's storage, would have) for each
#: outcome of its trial: a trial cut short, by the scheduler or otherwise, is marked KILLED
#: by the study's end.
RUN_STATUS = {
    FINISHED: RUN_FINISHED,
    STOPPED: RUN_KILLED,
    UNFINISHED: RUN_KILLED,
    ERROR: RUN_FAILED,
    RUNNING: RUN_RUNNING,
    PENDING: RUN_RUNNING,
    PAUSED: RUN_RUNNING,
}
#: How the run summary, `status` and the progress display name an outcome (any other: its
#: word in lower case).
OUTCOME_WORDS = {STOPPED: "stopped early", ERROR: "failed"}


def outcome_word(outcome: str) -> str:
    """An outcome as the messages name it: `STOPPED` -> "stopped early"."""
    return OUTCOME_WORDS.get(outcome, outcome.lower())


def trial_outcome(last: Mapping[str, Any], *, failed: bool, tune_status: str = _TERMINATED) -> str:
    """What became of a trial, from its last result: ERROR if it failed; FINISHED if it
    reported its final scores; Tune's status while Tune counts it live; else STOPPED if Tune
    ended it with `done` on its last result (the scheduler), UNFINISHED if not (Ctrl-C or a
    time budget: Tune stops its trials without `done`).

    `tune_status` is Tune's status of the trial where it is known; a trial of a finished
    `tuner.fit()` has been ended (TERMINATED).
    """
    if failed or tune_status == ERROR:
        return ERROR
    if last.get(EVALUATED):
        return FINISHED
    if tune_status in _LIVE:
        return tune_status
    return STOPPED if last.get(_DONE) else UNFINISHED


def fit_outcomes(results: Iterable[Any]) -> tuple[dict[str, int], list[str]]:
    """Outcome counts of the trials of a finished `tuner.fit()` (it returns normally after
    Ctrl-C or a time budget), and the Tune trial ids of those the scheduler stopped."""
    counts: Counter[str] = Counter()
    stopped = []
    for r in results:
        state = trial_outcome(r.metrics or {}, failed=r.error is not None)
        counts[state] += 1
        if state == STOPPED and r.metrics.get("trial_id"):
            stopped.append(str(r.metrics["trial_id"]))
    return dict(counts), stopped


class TuneStateError(RuntimeError):
    """A file of Tune's storage that cannot be read; the message names it and what still
    works (the MLflow store holds every finished trial)."""


#: Where the driver keeps the last whole copy of Tune's state files (`state_backup`).
BACKUP_DIR = ".last-good"


def _damaged(path: Path, what: str, why: str) -> TuneStateError:
    kept = path.parent / BACKUP_DIR / path.name
    remedy = (
        f"`raystudy resume STUDY` puts back the last whole copy, kept in {kept}"
        if kept.is_file()
        else "restore it from a backup, or start the study again with `raystudy run --overwrite`"
    )
    return TuneStateError(
        f"{path}: {what} cannot be read ({why}); the file is damaged (a full disk, a copy cut "
        "short, an edit). Finished trials are in the MLflow store: `raystudy analyze STUDY` "
        f"reads them from there; `resume` and `analyze --from-tune` need this file: {remedy}"
    )


def _json(path: Path, what: str, text: str | None = None) -> Any:
    try:
        return json.loads(path.read_text() if text is None else text)
    except json.JSONDecodeError as exc:
        raise _damaged(path, what, f"{exc.msg}, line {exc.lineno} column {exc.colno}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _damaged(path, what, str(exc)) from None


def _experiment_state(tune_dir: Path) -> list[tuple[dict[str, Any], Any]]:
    """(trial, runtime) of each trial in the latest experiment state of a study's Tune
    storage, as plain JSON (never the pickled parts); empty before Tune wrote one.
    TuneStateError naming the file when it is damaged."""
    states = sorted(tune_dir.glob("experiment_state-*.json"))
    if not states:
        return []
    what = "Tune's experiment state (the study's trials and their status)"
    data = _json(states[-1], what)
    if not isinstance(data, dict) or not isinstance(data.get("trial_data", []), list):
        raise _damaged(states[-1], what, "not the JSON object Tune writes")
    out = []
    for entry in data.get("trial_data", []):
        if not (isinstance(entry, list | tuple) and len(entry) == 2):
            raise _damaged(states[-1], what, "a trial entry is not a (trial, runtime) pair")
        trial_json, runtime_json = entry
        if isinstance(runtime_json, str):
            runtime = _json(states[-1], what, runtime_json)
        else:
            runtime = runtime_json
        trial = _json(states[-1], what, trial_json) if isinstance(trial_json, str) else trial_json
        if not isinstance(trial, dict) or "status" not in trial:
            raise _damaged(states[-1], what, "a trial entry has no status")
        out.append((trial, runtime))
    return out


def tune_statuses(tune_dir: Path) -> dict[str, str]:
    """Tune trial id -> Tune's own status (TERMINATED, ERROR, RUNNING, ...) from the latest
    experiment state; empty before Tune wrote one."""
    out: dict[str, str] = {}
    for trial, _runtime in _experiment_state(tune_dir):
        out[str(trial.get("trial_id", len(out)))] = trial["status"]
    return out


def tune_outcomes(tune_dir: Path) -> dict[str, str]:
    """Tune trial id -> `trial_outcome` of every trial in the latest experiment state; empty
    before Tune wrote one."""
    out: dict[str, str] = {}
    for trial, runtime in _experiment_state(tune_dir):
        status = trial["status"]
        last = runtime.get("last_result") if isinstance(runtime, dict) else None
        if isinstance(last, dict):
            state = trial_outcome(last, failed=False, tune_status=status)
        else:
            # A state written without the last result (another Ray): Tune's word is all
            # there is, and a trial it ended counts as finished.
            state = FINISHED if status == _TERMINATED else status
        out[str(trial.get("trial_id", len(out)))] = state
    return out


@dataclass(frozen=True)
class TuneTrial:
    """One trial folder of Tune's experiment storage."""

    name: str
    trial_id: str
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    error: str | None
    #: Tune's status of the trial (TERMINATED, ERROR, RUNNING, ...), when recorded.
    tune_state: str | None = None

    @property
    def evaluated(self) -> bool:
        """Whether the trial reported its final scores (what makes it finished for raystudy)."""
        return bool(self.rows) and bool(self.rows[-1].get(EVALUATED))

    @property
    def outcome(self) -> str:
        """`trial_outcome` of the trial. Its `error.txt` says it failed only if it did not report
        its scores since (a retried trial keeps the file of its earlier failure); a trial Tune
        has no status for has not ended, as far as Tune has said."""
        failed = self.error is not None and not self.evaluated
        last = self.rows[-1] if self.rows else {}
        return trial_outcome(last, failed=failed, tune_status=self.tune_state or RUNNING)

    @property
    def status(self) -> str:
        """The MLflow status this trial's run would have (`RUN_STATUS`): FINISHED, FAILED,
        KILLED (Tune stopped it before its scores, e.g. ASHA; the study's end marks its run
        so) or RUNNING."""
        return RUN_STATUS[self.outcome]

    def history(self) -> list[tuple[int, dict[str, float]]]:
        """(step, train/* means) of every train report, in order."""
        return [
            (int(row["step"]), {k: v for k, v in row.items() if k.startswith(TRAIN)})
            for row in self.rows
            if "step" in row and any(k.startswith(TRAIN) for k in row)
        ]

    def final(self) -> dict[str, float]:
        """The final scores, from the last report; empty for a trial that did not finish."""
        if not self.evaluated:
            return {}
        return {k: v for k, v in self.rows[-1].items() if k.startswith(FINAL_PREFIXES)}

    def metrics(self) -> dict[str, float]:
        """Latest value of every metric, as MLflow's `metrics.*` columns hold them."""
        latest: dict[str, float] = {}
        for _, row in self.history():
            latest.update(row)
        return {**latest, **self.final()}

    def member(self, s: int, name: str, trial_id: str) -> TuneTrial:
        """Model s of a stacked trial, as if it had been a trial of its own: its values from
        ``stack/<s>/`` of every report. It finished if the last report has its final scores;
        it failed if the trial did, or if it diverged (the others train on without it)."""
        prefix = f"{STACK_KEYS}{s}/"
        rows: list[dict[str, Any]] = []
        diverged: float | None = None
        for row in self.rows:
            own = {k[len(prefix) :]: v for k, v in row.items() if k.startswith(prefix)}
            diverged = own.pop(DIVERGED_KEY, diverged)
            out = {"step": row.get("step"), **own}
            if row.get(EVALUATED) and any(k.startswith(FINAL_PREFIXES) for k in own):
                out[EVALUATED] = 1.0
            rows.append(out)
        error = self.error
        if error is None and diverged is not None:
            error = f"TrainingDiverged: loss not finite at step {int(diverged)}"
        if error is None and self.evaluated and not (rows and rows[-1].get(EVALUATED)):
            error = "not evaluated: its stacked trial finished without its scores"
        return TuneTrial(name, trial_id, self.config, rows, error, self.tune_state)


def _error_line(path: Path) -> str | None:
    """The last line of Tune's `error.txt`: the exception and its message (a trial that was
    retried and then finished keeps the file of its earlier failure)."""
    if not path.is_file():
        return None
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:5000] if lines else "error (empty error.txt)"


def _whole_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


def read_tune_trials(tune_dir: Path, skip: Container[str] = ()) -> list[TuneTrial]:
    """Every trial folder under `tune_dir` that has a `params.json` and is not named in
    `skip`, sorted by name."""
    statuses = tune_statuses(tune_dir)
    trials = []
    for params in sorted(tune_dir.glob("*/params.json")):
        folder = params.parent
        if folder.name in skip:
            continue
        rows = []
        result = folder / "result.json"
        if result.is_file():
            for line in result.read_text().splitlines():
                if line.strip():
                    # A driver killed mid-write can leave a truncated last line.
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
        trial_id = next((str(r["trial_id"]) for r in rows if "trial_id" in r), "")
        if not rows and not _whole_json(params):
            continue  # cut short before the trial reported anything: it holds nothing to read
        config = _json(params, "the trial's config (Tune's params.json)")
        error = _error_line(folder / "error.txt")
        trials.append(TuneTrial(folder.name, trial_id, config, rows, error, statuses.get(trial_id)))
    return trials
