"""What every trial shares, lone or stacked: its context (and the study's, `StudyContext`),
the Reporter it reports to, the tags and artifacts of its runs, and the setup before training
and the closing of its runs on the way out.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from raystudy.artifacts.figures import draw_figures
from raystudy.artifacts.reconstructions import draw_reconstructions, reconstruction_strip
from raystudy.artifacts.subject import Subject
from raystudy.data import GroundTruthDataset, Split
from raystudy.data.splits.registry import split_tag
from raystudy.disk_full import is_disk_full
from raystudy.lineage import data_input, lineage
from raystudy.models import VAE, Objective, build, model_cost
from raystudy.scoring import FixedSample
from raystudy.spec import TrialConfig
from raystudy.tags import (
    ARTIFACT_ERROR_TAG,
    CHECKPOINT_FALLBACK_TAG,
    DIVERGED_TAG,
    ERROR_TAG,
    GPU_IDS_TAG,
    LINEAGE_ERROR_TAG,
    NODE_TAG,
    RUN_FAILED,
    RUN_KILLED,
    SPLIT_TAG,
    STUDY_TAG,
    TIMED_OUT_TAG,
    VERSION_TAG,
)
from raystudy.tracking.trial_run import TrialRun
from raystudy.training.loop import TrainingDiverged
from raystudy.trials.time_limit import TrialTimedOut, time_limit


def error_tags(exc: BaseException) -> dict[str, str]:
    """Tags of a failed run: the error, and for a diverged trial the step it was caught at."""
    tags = {ERROR_TAG: f"{type(exc).__name__}: {exc}"[:5000]}
    if isinstance(exc, TrainingDiverged):
        tags[DIVERGED_TAG] = str(exc.step)
    if isinstance(exc, TrialTimedOut):
        tags[TIMED_OUT_TAG] = f"{exc.limit_s:g}"
    return tags


class Reporter(Protocol):
    """Where a trial's results and checkpoints go (Tune in a study, a list in a notebook)."""

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None: ...

    def restore(self) -> dict[str, Any] | None: ...


def restored(reporter: Reporter, runs: Sequence[TrialRun]) -> dict[str, Any] | None:
    """The reporter's checkpoint state (None: start afresh); when it had to read an older
    checkpoint than the newest (`TuneReporter.fallback`), the runs are tagged with why."""
    state = reporter.restore()
    note = getattr(reporter, "fallback", None)
    if note:
        for run in runs:
            run.set_tags({CHECKPOINT_FALLBACK_TAG: note[:5000]})
    return state


@dataclass(frozen=True)
class TrialContext:
    tracking_uri: str
    experiment_id: str
    parent_run_id: str | None
    study: str
    trial_id: str
    trial_name: str
    cpus: float = 1.0
    code_version: str = ""
    node: str = ""
    gpu_ids: str = ""
    #: `execution.log_models`, `register_models`, `system_metrics` and `log_artifacts` of the
    #: study.
    log_models: bool = True
    register_models: bool = False
    system_metrics: bool = True
    log_artifacts: bool = True
    #: `execution.trial_time_limit_s`: wall seconds an attempt of the trial may take.
    time_limit_s: float | None = None


@dataclass(frozen=True)
class StudyContext:
    """What every trial of a study shares, built once by the study driver and handed to each
    Tune trial, which adds its own id, name and placement (`trial`)."""

    tracking_uri: str
    experiment_id: str
    parent_run_id: str | None
    study: str
    code_version: str
    #: Each trial's resources, as fitted to the cluster (`raystudy.tune.probe`).
    cpus: float
    gpu: float
    #: `execution.log_models`, `register_models`, `system_metrics` and `log_artifacts`.
    log_models: bool = True
    register_models: bool = False
    system_metrics: bool = True
    log_artifacts: bool = True
    time_limit_s: float | None = None

    @property
    def resources(self) -> dict[str, float]:
        """What each trial asks Tune for."""
        return {"cpu": self.cpus, "gpu": self.gpu}

    def trial(self, trial_id: str, trial_name: str, node: str, gpu_ids: str) -> TrialContext:
        """The context of one trial of the study, placed on `node` with `gpu_ids`: every field
        the two contexts share is the study's."""
        shared = {
            f.name: getattr(self, f.name) for f in fields(TrialContext) if hasattr(self, f.name)
        }
        return TrialContext(
            **shared, trial_id=trial_id, trial_name=trial_name, node=node, gpu_ids=gpu_ids
        )


def run_tags(config: TrialConfig, ctx: TrialContext) -> dict[str, str]:
    """The tags of a model's MLflow run: its study, code, placement and split."""
    return {
        STUDY_TAG: ctx.study,
        VERSION_TAG: ctx.code_version,
        NODE_TAG: ctx.node,
        GPU_IDS_TAG: ctx.gpu_ids,
        SPLIT_TAG: split_tag(config.split),
    }


def record_lineage(
    runs: Iterable[TrialRun], config: TrialConfig, split: Split, device: torch.device
) -> None:
    """Versions, commit, device (tags) and the dataset and split (a dataset input) of each
    run; what fails here is tagged `raystudy.lineage_error`, never the trial's failure."""
    try:
        tags = lineage(device)
        data = data_input(
            config.dataset.name, config.dataset.options, split_tag(config.split), split
        )
    except Exception as exc:
        tags, data = {LINEAGE_ERROR_TAG: f"{type(exc).__name__}: {exc}"[:5000]}, None
    for run in runs:
        try:
            run.set_tags(tags)
            if data is not None:
                run.log_dataset(data.name, data.digest, data.source, data.profile)
        except Exception as exc:
            with contextlib.suppress(Exception):
                run.set_tags({LINEAGE_ERROR_TAG: f"{type(exc).__name__}: {exc}"[:5000]})


def torch_setup(ctx: TrialContext) -> tuple[int, torch.device]:
    """Torch's threads (the trial's CPUs) and the device it trains on."""
    threads = max(1, int(ctx.cpus))
    torch.set_num_threads(threads)
    return threads, torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_seeded(
    config: TrialConfig, dataset: GroundTruthDataset, device: torch.device
) -> tuple[VAE, Objective]:
    """The model and objective of `config` on `device`, their initial weights fixed by the
    trial's seed (a stacked model gets the weights its lone trial would)."""
    torch.manual_seed(config.seed)
    model, objective = build(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    return model.to(device), objective


def cost_params(
    model: VAE, objective: Objective, dataset: GroundTruthDataset, batch_size: int
) -> dict[str, int]:
    """The model's size and cost, logged among its run's params."""
    return model_cost(
        model,
        objective,
        dataset.channels,
        dataset.resolution,
        dataset.factors.num_factors,
        batch_size,
    )


def limited(
    ctx: TrialContext, still_open: Callable[[], Iterable[TrialRun]]
) -> contextlib.AbstractContextManager[None]:
    """The trial's wall-time limit (`trials.time_limit`); a trial stuck outside Python past
    it has the runs `still_open()` names failed with the timeout before its worker ends."""

    def fail(error: TrialTimedOut) -> None:
        for run in still_open():
            run.set_tags(error_tags(error))
            run.finish(RUN_FAILED)

    return time_limit(ctx.time_limit_s, fail)


@contextmanager
def closing_runs_on_exit(still_open: Callable[[], Iterable[TrialRun]]) -> Iterator[None]:
    """Close the runs `still_open()` names when the trial leaves early, then re-raise.

    Tune stops a trial (a scheduler's decision, the study's end) by raising SystemExit from
    report(): such a run was cut short, it did not fail, and is KILLED, as on Ctrl-C (no
    error either: an interrupt is the user's choice); any other error FAILS it with the
    error's tags.
    """
    try:
        yield
    except BaseException as exc:
        stopped = isinstance(exc, SystemExit | KeyboardInterrupt)
        # A full disk may refuse these writes too; the error to report is the first.
        with contextlib.suppress(Exception) if is_disk_full(exc) else contextlib.nullcontext():
            for run in still_open():
                if not stopped:
                    run.set_tags(error_tags(exc))
                run.finish(RUN_KILLED if stopped else RUN_FAILED)
        raise


def log_artifacts(
    run: TrialRun, subject: Subject, config: TrialConfig, fixed: FixedSample | None = None
) -> None:
    """The trial config, inputs over reconstructions (of the encoder's training distribution,
    and of each held-out set of the split), latent traversals, the held-out codes' projection,
    a composition model's trials and (when DCI is evaluated) its importance matrix as a Hinton
    diagram, for the MLflow UI (`raystudy.artifacts`).

    The figures only explain numbers already logged: one that cannot be drawn is recorded in
    the tag `raystudy.artifact_error` instead of failing a trained and evaluated trial.
    """
    idx = subject.split.sample("encoder", 8, np.random.default_rng([subject.seed, 4]))
    strip = reconstruction_strip(subject, idx)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config_path = folder / "trial_config.json"
        config_path.write_text(json.dumps(config.model_dump(mode="json"), indent=2))
        run.log_artifact(config_path)
        run.log_artifact(draw_reconstructions(folder, strip))
        errors = draw_figures(folder, subject, idx, config.evaluation, fixed, run.log_artifact)
        if errors:
            run.set_tags({ARTIFACT_ERROR_TAG: "; ".join(errors)[:5000]})
