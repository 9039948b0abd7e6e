"""A model and its objective from a `ModelConfig`, and what they cost (parameters, FLOPs)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from raystudy.models.architectures import ARCHITECTURES
from raystudy.models.objectives import Batch, Objective, objective_from_config
from raystudy.models.vae import VAE, HeadedEncoder, NoImageEncoder
from raystudy.spec import ModelConfig


def build_model(
    architecture: str,
    channels: int,
    latent_dim: int,
    resolution: int = 64,
    code_is_ground_truth: bool = False,
    decoder_head: nn.Module | None = None,
    encoder_head: nn.Module | None = None,
    transform: nn.Module | None = None,
) -> VAE:
    """The VAE; with a `decoder_head` (an objective's, see `Objective.decoder_head`) the
    decoder reads the head's `out_features` features and the model decodes head then decoder;
    with an `encoder_head` (`Objective.encoder_head`) the architecture's encoder ends in the
    head's `in_features` features, from which the head computes (mu, logvar); a
    `transform` (`Objective.latent_transform`) becomes the model's `transform`."""
    decoder_input_dim = latent_dim if decoder_head is None else int(decoder_head.out_features)
    encoder_output_dim = latent_dim if encoder_head is None else int(encoder_head.in_features)
    encoder, decoder = ARCHITECTURES.get(architecture)(
        channels, encoder_output_dim, resolution, decoder_input_dim
    )
    if encoder_head is not None:
        encoder = HeadedEncoder(encoder, encoder_head)
    if code_is_ground_truth:  # the factors are the code: no encoder to train or count
        encoder = NoImageEncoder()
    if decoder_head is not None:
        decoder = nn.Sequential(decoder_head, decoder)
    return VAE(
        encoder,
        decoder,
        latent_dim,
        code_is_ground_truth=code_is_ground_truth,
        transform=transform,
    )


def build(
    config: ModelConfig, channels: int, resolution: int, num_factors: int
) -> tuple[VAE, Objective]:
    """The model and objective a trial trains. The reference objectives (gt_decoder,
    supervised) get a code of one dimension per factor whatever `latent_dim` says."""
    objective = objective_from_config(config)
    latent_dim = num_factors if objective.code_is_factor_sized else config.latent_dim
    model = build_model(
        config.architecture,
        channels,
        latent_dim,
        resolution,
        code_is_ground_truth=objective.code_is_ground_truth,
        decoder_head=objective.decoder_head(latent_dim),
        encoder_head=objective.encoder_head(latent_dim),
        transform=objective.latent_transform(latent_dim, num_factors),
    )
    return model, objective


def num_parameters(model: nn.Module) -> int:
    """Trainable parameters of the model (encoder and decoder; not an objective's own
    networks such as FactorVAE's discriminator)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def example_batch(
    channels: int,
    resolution: int,
    num_factors: int,
    batch_size: int,
    pairs: bool,
    device: torch.device,
    triples: bool = False,
) -> Batch:
    """Random tensors of a training batch's shapes (for FLOP counting and tests); with
    `triples`, a composition batch (reference, transform, target and a one-hot action)."""

    def images() -> torch.Tensor:
        return torch.rand(batch_size, channels, resolution, resolution, device=device)

    def factors() -> torch.Tensor:
        return torch.rand(batch_size, num_factors, device=device)

    if triples:
        action = torch.eye(num_factors, device=device)[
            torch.arange(batch_size, device=device) % num_factors
        ]
        return Batch(images(), images(), images(), None, factors(), factors(), action)
    if pairs:
        x1, x2 = images(), images()
        return Batch(x1, x1, x2, x2, factors(), factors())
    x = images()
    return Batch(x, x, factors=factors())


def flops_per_step(model: VAE, objective: Objective, batch: Batch) -> int:
    """FLOPs of one training step on `batch`: the objective's forward and backward passes
    (the auxiliary loss's too), counted by torch's FlopCounterMode. It counts matrix
    multiplications and convolutions (2 per multiply-add), not elementwise operations or the
    optimiser update. Leaves no gradients behind; consumes random numbers (call it before
    seeding the training)."""
    with FlopCounterMode(display=False) as counter:
        terms = objective(model, batch, step=0)
        terms.loss.backward()
        if terms.aux_loss is not None:
            terms.aux_loss.backward()
    model.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())


def model_cost(
    model: VAE,
    objective: Objective,
    channels: int,
    resolution: int,
    num_factors: int,
    batch_size: int,
) -> dict[str, int]:
    """The trial params `model.num_params` and `model.flops_per_step` (one step at
    `batch_size`, counted on random inputs on the model's device)."""
    device = next(model.parameters()).device
    batch = example_batch(
        channels, resolution, num_factors, batch_size, objective.pairs, device, objective.triples
    )
    return {
        "model.num_params": num_parameters(model),
        "model.flops_per_step": flops_per_step(model, objective, batch),
    }
