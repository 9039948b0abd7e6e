"""The two steps a lone trial and a stacked one share around their training: building the
models before any run opens (so their size and cost are params of the runs, and a failure is
kept to be recorded on the runs once they are open), and finishing one trained model (scores,
the decoder test, artifacts, the logged model), each result logged as soon as it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from raystudy.artifacts.subject import Subject
from raystudy.data import GroundTruthDataset, Split, get_dataset
from raystudy.models import VAE, Objective
from raystudy.phases import phase
from raystudy.scoring import score_model
from raystudy.spec import TrialConfig
from raystudy.tags import INVALID_SCORES_TAG, probe_tag
from raystudy.tracking.trial_run import TrialRun
from raystudy.trials.common import (
    TrialContext,
    build_seeded,
    cost_params,
    log_artifacts,
)
from raystudy.trials.decoder_arms import decoder_test_scores
from raystudy.trials.logged_model import log_trained_model


@dataclass
class Built:
    """The dataset and, per config, the model and objective; `error` if building failed (to
    be raised once the runs are open, which record it), with whatever was built before."""

    dataset: GroundTruthDataset | None = None
    models: list[VAE] = field(default_factory=list)
    objectives: list[Objective] = field(default_factory=list)
    #: The first model's size and cost (all models of a stack share the architecture).
    cost: dict[str, int] = field(default_factory=dict)
    error: Exception | None = None

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def build_models(configs: list[TrialConfig], device: torch.device) -> Built:
    """Build the dataset of `configs[0]` and each config's model, seeded as its lone trial
    seeds it. Never raises: the error is kept in `Built.error`."""
    built = Built()
    try:
        base = configs[0]
        with phase("data"):
            built.dataset = get_dataset(base.dataset.name, **base.dataset.options)
        with phase("model"):
            for config in configs:
                model, objective = build_seeded(config, built.dataset, device)
                built.models.append(model)
                built.objectives.append(objective)
            # Consumes random numbers; training seeds again before it draws any.
            built.cost = cost_params(
                built.models[0], built.objectives[0], built.dataset, base.train.batch_size
            )
    except Exception as exc:
        built.error = exc
    return built


def finish_model(
    run: TrialRun,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
    ctx: TrialContext,
    threads: int,
) -> dict[str, float]:
    """Score a trained model and log it: metrics, probes and eval/* scores, the decoder test,
    artifacts (if the study logs them) and the model itself; each part is on its run before
    the next starts, so a failure later loses nothing already measured. The run stays open."""
    results = score_model(model, dataset, split, config, device, n_jobs=threads)
    run.log_metrics(results, step=config.train.steps)
    if results.probes:
        # Which implementation computed each probe (scikit-learn's or its GPU twin): a score's
        # provenance, so runs scored on different devices are never compared unknowingly.
        run.set_tags({probe_tag(name): how for name, how in results.probes.items()})
    if results.invalid:
        # Left out, never zeroed into valid-looking scores: the run says which and why.
        note = "; ".join(f"{part}: {why}" for part, why in results.invalid.items())
        run.set_tags({INVALID_SCORES_TAG: note[:5000]})
    with phase("decoder_test"):
        tested = decoder_test_scores(model, dataset, split, config, device)
    run.log_metrics(tested, step=config.train.steps)
    results |= tested
    if ctx.log_artifacts:
        with phase("figures"):
            subject = Subject(model, dataset, split, device, config.evaluation.seed)
            log_artifacts(run, subject, config, results.fixed)
    with phase("model_export"):
        log_trained_model(run, model, dataset, split, config, ctx)
    return results
