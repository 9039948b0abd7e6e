"""What `raystudy run`, `optimize` and `resume` say of a study: the line a run starts with,
and the report it ends with (what finished, what did not, what to do next) with the exit code
that goes with it; and the `Report` (lines in their styles, an exit code) every study command
returns its text as. Text only: the command line prints each line in its style."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raystudy.spec import StudySpec
from raystudy.study.folder import STUDY_FILE, study_path
from raystudy.tags import BY_ASHA, STOPPED_TAG
from raystudy.tune.state import ERROR, OUTCOMES, STOPPED, TUNE_DIR, outcome_word

if TYPE_CHECKING:
    from raystudy.study.outcome import StudyOutcome

#: A line's style: plain (stdout), a warning (stdout, yellow), an error (stderr, red).
PLAIN, WARNING, PROBLEM = "plain", "warning", "error"


@dataclass(frozen=True)
class Line:
    """One line a command prints, in its style."""

    text: str
    style: str = PLAIN


@dataclass(frozen=True)
class Report:
    """What a command says, and its exit code."""

    lines: list[Line]
    exit_code: int


def start_line(spec: StudySpec, output: Path) -> str:
    """The trials about to run (in how many Tune trials, when stacked) and the folder."""
    stacked = ""
    if spec.execution.seeds_per_trial > 1:
        stacked = (
            f" in {spec.num_tune_trials()} Tune trials of up to "
            f"{spec.execution.seeds_per_trial} "
            f"{'models' if spec.execution.stack_over else 'seeds'} each"
        )
    where = study_path(output, spec.name)
    return f"Study {spec.name!r}: {spec.num_trials()} trials{stacked} -> {where}"


def outcome_report(outcome: StudyOutcome, output: Path, log: Path | None = None) -> Report:
    """Say what finished, what did not, and what to do next; exit code 1 when a trial is not
    done or MLflow is incomplete, else 0."""
    name = outcome.info.name
    order = [*OUTCOMES, *sorted(set(outcome.states) - set(OUTCOMES))]
    states = ", ".join(
        f"{outcome.states[k]} {outcome_word(k)}" for k in order if k in outcome.states
    )
    lines = [Line(f"Study {name!r} ended in {outcome.wall_s:.0f} s: {states}.")]
    if outcome.states.get(STOPPED):
        lines.append(
            Line(
                f"{outcome.states[STOPPED]} trials were stopped early by the scheduler (ASHA) "
                "before their final scores: pruned in Optuna, their MLflow runs KILLED with the "
                f"tag {STOPPED_TAG}={BY_ASHA}; they are done, not resumed."
            )
        )
    if log is not None:
        lines.append(Line(f"Log (Ray, Tune, trial output): {log}"))
    lines.append(Line(f"MLflow UI: raystudy ui {name} --output {output}"))
    lines.append(Line(f"Analysis:  raystudy analyze {name} --output {output}"))
    if outcome.synced:
        synced = f"Logged {outcome.synced} finished trials to MLflow from Tune's storage."
        lines.append(Line(synced))
    if outcome.tracking_error:
        text = (
            f"MLflow is incomplete: {outcome.tracking_error}. Finished trials it lacks are in "
            f"Tune's storage ({outcome.info.study_dir / TUNE_DIR}): `raystudy analyze {name} "
            f"--output {output} --from-tune` analyses them now, and `raystudy resume {name} "
            f"--output {output}` logs them to MLflow once the store is back."
        )
        lines.append(Line(text, PROBLEM))
    if not outcome.ok:
        done = outcome.done  # finished, or stopped by the scheduler: nothing to resume
        total = outcome.info.num_tune_trials
        text = (
            f"{total - done} of {total} trials did not "
            f"finish. Continue with: raystudy resume {name} --output {output}"
            + (" --restart-errored" if outcome.states.get(ERROR) else "")
        )
        lines.append(Line(text, WARNING))
    return Report(lines, 1 if not outcome.ok or outcome.tracking_error else 0)


def interrupted_line(study: str, output: Path) -> Line:
    """What a Ctrl-C that ended `run`, `optimize` or `resume` leaves: a study that started keeps
    what each trial recorded up to its last checkpoint, and `resume` continues it (a warning);
    one that had not started left nothing."""
    if (study_path(output, study) / STUDY_FILE).is_file():
        text = (
            f"Interrupted: stopped at once, without waiting for Tune's last save of the "
            f"study's state; every trial keeps what it recorded up to its last checkpoint. "
            f"`raystudy resume {study} --output {output}` continues the study."
        )
        return Line(text, WARNING)
    return Line("Interrupted before the study started: nothing was written.")
