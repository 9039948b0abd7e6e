"""`raystudy evaluate` from Python: an encoder scored as a trial is scored (`evaluate`), its
options read as the command reads them, the scores written to JSON and logged beside a study.

The MLflow store the encoder is loaded from and its run logged to is `tracking_uri`, else that
of the study `experiment` names under `output` (the run nested under the study's parent run),
else MLFLOW_TRACKING_URI (`evaluation_store`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from raystudy.evaluate import (
    MLFLOW_SCHEMES,
    EncoderError,
    EncoderScores,
    encoder_scores,
    evaluation_setup,
)
from raystudy.spec import OptionError, parse_options, parse_yaml
from raystudy.study.folder import STUDY_FILE, StudyInfo, study_path
from raystudy.study.report import PROBLEM, Line, Report


@dataclass(frozen=True)
class EvaluationStore:
    """Where the scores go: the tracking URI (None: no store) and the parent run of the study
    they are logged beside (None: no study)."""

    uri: str | None
    parent_run_id: str | None = None


@dataclass(frozen=True)
class Evaluation:
    """An encoder's scores and where they went: the JSON file, and the run of `experiment`
    (`run_id`), or `log_error`, why they could not be logged (scored and written all the same)."""

    scored: EncoderScores
    store: EvaluationStore
    json_path: Path | None = None
    experiment: str | None = None
    run_id: str | None = None
    log_error: str | None = None

    def report(self) -> Report:
        """What `raystudy evaluate` prints: a line per score, then where they went; exit code
        2 when they could not be logged."""
        scores = self.scored.scores
        width = max((len(k) for k in scores), default=0)
        lines = [Line(f"{key:{width}s}  {value:.6g}") for key, value in sorted(scores.items())]
        if self.json_path is not None:
            lines.append(Line(f"Scores -> {self.json_path}"))
        if self.log_error is not None:
            failed = Line(f"the scores were not logged: {self.log_error}", PROBLEM)
            return Report([*lines, failed], 2)
        if self.run_id is not None:
            where = f"experiment {self.experiment!r} ({self.store.uri})"
            lines.append(Line(f"Logged as run {self.run_id} of {where}"))
        return Report(lines, 0)


def evaluation_store(
    tracking_uri: str | None,
    experiment: str | None,
    output: str | Path = Path("studies"),
    encoder: str = "",
) -> EvaluationStore:
    """The store to load `encoder` from and log `experiment`'s run to. StudyError for the
    named study's unreadable study.json; EncoderError when a logged model or `experiment`
    needs a store and there is none."""
    if experiment is not None and (study_path(output, experiment) / STUDY_FILE).is_file():
        info = StudyInfo.read(study_path(output, experiment))
        return EvaluationStore(tracking_uri or info.tracking_uri, info.parent_run_id)
    store = EvaluationStore(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"))
    if store.uri is None and (experiment is not None or encoder.startswith(MLFLOW_SCHEMES)):
        raise EncoderError(
            f"{'--experiment' if experiment else '--encoder ' + encoder} needs an MLflow "
            "store: --tracking-uri URI, MLFLOW_TRACKING_URI, or --experiment <study> with "
            "--output <the folder that holds it>"
        )
    return store


def names(values: Sequence[str] | None) -> list[str] | None:
    """`--metrics dci,mig` or `--metrics dci --metrics mig`; `--metrics ''` is none."""
    if values is None:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def evaluate_beside(
    encoder: str,
    dataset: str,
    split: str = "iid",
    *,
    metrics: Sequence[str] | None = None,
    probes: Sequence[str] | None = None,
    seed: int | None = None,
    fields: Sequence[str] | None = None,
    options: Sequence[str] | None = None,
    json_path: Path | None = None,
    experiment: str | None = None,
    tracking_uri: str | None = None,
    output: str | Path = Path("studies"),
    device: str = "cpu",
    n_jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> Evaluation:
    """Score `encoder` on `dataset` and `split` (a name, or YAML selectors in braces) with
    the evaluation `fields` (`key=value`, YAML values) and dataset `options` (the same), write
    the scores to `json_path` and log them as a run of `experiment`, as `raystudy evaluate`
    does. OptionError, SpecError or EncoderError (each a ValueError) for what cannot be
    used, StudyError for a study that cannot be read."""
    store = evaluation_store(tracking_uri, experiment, output, encoder)
    evaluation = parse_options([f.removeprefix("evaluation.") for f in fields or ()], "--set")
    if seed is not None:
        evaluation["seed"] = seed
    try:
        split_value = parse_yaml(split) if split.lstrip().startswith("{") else split
    except ValueError as exc:
        raise OptionError(f"--split: {exc}") from None
    dataset_options = parse_options(options or (), "--option")
    try:
        where = torch.device(device)
    except RuntimeError as exc:
        raise OptionError(f"--device {device!r}: {exc}") from None
    setup = evaluation_setup(
        dataset,
        split_value,
        evaluation,
        metrics=names(metrics),
        probes=names(probes),
        dataset_options=dataset_options,
    )
    scored = encoder_scores(
        encoder, setup, tracking_uri=store.uri, device=where, n_jobs=n_jobs, progress=progress
    )
    if json_path is not None:
        Path(json_path).write_text(json.dumps(dict(sorted(scored.scores.items())), indent=2))
    done = Evaluation(scored, store, json_path, experiment)
    if experiment is None:
        return done
    # MLflow is loaded only to log (as `raystudy.evaluate` loads it only when asked for).
    from raystudy.tracking.external import log_external_run
    from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

    try:
        run_id = log_external_run(
            store.uri,
            experiment,
            scored.name,
            scored.config,
            scored.scores,
            parent_run_id=store.parent_run_id,
        )
    except (TrackingUnreachable, TrackingRejected) as exc:
        return dataclasses.replace(done, log_error=str(exc))
    return dataclasses.replace(done, run_id=run_id)
