"""A finished trial's encoder, logged as its run's MLflow model (`execution.log_models`) and
registered (`execution.register_models`), for `mlflow.pytorch.load_model` and `raystudy
evaluate --encoder runs:/<run id>/model`.

The model only lets the trial's numbers be reused: like a figure, one that cannot be logged is
recorded in the tag `raystudy.model_error` instead of failing a trained and scored trial.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.data.splits.registry import split_tag
from raystudy.disk_full import is_disk_full
from raystudy.models import VAE
from raystudy.models.encoder import NoRepresentationEncoder, representation_encoder
from raystudy.models.params import model_params, trial_params
from raystudy.spec import TrialConfig
from raystudy.tags import MODEL_ERROR_TAG, MODEL_TAG, STUDY_TAG
from raystudy.tracking.models import registered_model_name
from raystudy.tracking.trial_run import TrialRun
from raystudy.trials.common import TrialContext


def key_params(config: TrialConfig, ctx: TrialContext) -> dict[str, str]:
    """What tells one registered version from another: the model's hyperparameters (those
    its objective reads), dataset, split, seed, steps, study and trial."""
    model = {f"model.{k}": v for k, v in model_params(config.model).items()}
    keys: dict[str, Any] = {
        **model,
        "dataset.name": config.dataset.name,
        "split": split_tag(config.split),
        "seed": config.seed,
        "train.steps": config.train.steps,
        STUDY_TAG: ctx.study,
        "trial": ctx.trial_name,
    }
    return {k: str(v) for k, v in keys.items()}


def log_trained_model(
    run: TrialRun,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    ctx: TrialContext,
) -> str | None:
    """Log `model`'s encoder on `run` (and register it, if the study says so); returns its
    `models:/<id>` URI, or None when it was not logged (why is in `raystudy.model_error`)."""
    if not ctx.log_models:
        return None
    try:
        encoder = representation_encoder(model, dataset.channels, dataset.resolution)
        # Real images as the input example: two, since torch.export fixes a batch of one.
        idx = split.sample("encoder", 2, np.random.default_rng([config.evaluation.seed, 6]))
        with torch.no_grad():
            example = dataset.render(torch.from_numpy(idx)).cpu()
        tags = key_params(config, ctx)
        uri = run.log_model(
            encoder,
            example,
            params=trial_params(config),
            tags=tags,
            step=config.train.steps,
            registered_name=registered_model_name(ctx.study) if ctx.register_models else None,
        )
    except NoRepresentationEncoder as exc:
        run.set_tags({MODEL_ERROR_TAG: str(exc)})
        return None
    except Exception as exc:  # recorded on the run: see the module docstring
        if is_disk_full(exc):  # a trial whose model could not be kept is not finished
            raise
        run.set_tags({MODEL_ERROR_TAG: f"{type(exc).__name__}: {exc}"[:5000]})
        return None
    if uri is not None:
        run.set_tags({MODEL_TAG: uri})
    return uri
