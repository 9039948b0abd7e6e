"""Encoders/decoders and objectives of the VAE family. Imports neither Ray nor MLflow."""

from __future__ import annotations

from raystudy.models.architectures import ARCHITECTURES
from raystudy.models.noise import add_input_noise
from raystudy.models.objectives import OBJECTIVES, Batch, LossTerms, Objective, get_objective
from raystudy.models.vae import VAE


def build_model(architecture: str, channels: int, latent_dim: int, resolution: int = 64) -> VAE:
    encoder, decoder = ARCHITECTURES.get(architecture)(channels, latent_dim, resolution)
    return VAE(encoder, decoder, latent_dim)


__all__ = [
    "ARCHITECTURES",
    "OBJECTIVES",
    "VAE",
    "Batch",
    "LossTerms",
    "Objective",
    "add_input_noise",
    "build_model",
    "get_objective",
]
