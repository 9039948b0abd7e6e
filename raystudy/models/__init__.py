"""Encoders/decoders and objectives of the VAE family. Imports neither Ray nor MLflow."""

from __future__ import annotations

from raystudy.models.architectures import ARCHITECTURES
from raystudy.models.factory import (
    build,
    build_model,
    example_batch,
    flops_per_step,
    model_cost,
    num_parameters,
)
from raystudy.models.noise import add_input_noise
from raystudy.models.objectives import (
    OBJECTIVES,
    Batch,
    LossTerms,
    Objective,
    PairK,
    get_objective,
    objective_from_config,
)
from raystudy.models.vae import VAE

__all__ = [
    "ARCHITECTURES",
    "OBJECTIVES",
    "VAE",
    "Batch",
    "LossTerms",
    "Objective",
    "PairK",
    "add_input_noise",
    "build",
    "build_model",
    "example_batch",
    "flops_per_step",
    "get_objective",
    "model_cost",
    "num_parameters",
    "objective_from_config",
]
