"""CompositionNet (Montero et al., ICLR 2021, "The role of disentanglement in generalisation",
Sec. 2.3, Fig. 5b and App. A): a VAE trained on the image composition task.

Given a reference image x_r, a transform image x_t and a one-hot action a over the K factors
(`raystudy.data.composition`), the one encoder codes both images, z_r ~ q(z|x_r) and
z_t ~ q(z|x_t), a linear layer combines the samples with the action (their method (iii), the
one the paper reports),

    h = W_r cat[z_r; a] + W_t cat[z_t; a] + b

and the decoder renders h as the target image y. The loss, per triple, averaged over the batch:

    loss = -log p(y | h) + beta * (KL(q(z|x_r) || N(0, I)) + KL(q(z|x_t) || N(0, I)))

(Bernoulli likelihood summed over pixels, like every objective here). The paper trains it with
beta = 1 ("Using beta higher than 1 interfered with the model's ability to solve the task"),
Burgess et al.'s conv encoder and decoder and 10 latents. The bias b is the authors' code's
(two `nn.Linear` layers, ``mmrl/disent-and-gen``, ``LinearMixer``); the paper's formula omits
it. Reported: `kl` is the sum of both images' KLs.

The layer is the model's (`VAE.transform`), so it trains, checkpoints, stacks
(`execution.seeds_per_trial`) and is logged with it.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field
from torch import nn

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


class LatentComposition(nn.Module):
    """(z_r [B, D], z_t [B, D], action [B, K]) -> W_r cat[z_r; a] + W_t cat[z_t; a] [B, D]."""

    def __init__(self, latent_dim: int, num_actions: int) -> None:
        super().__init__()
        self.num_actions = num_actions
        self.reference = nn.Linear(latent_dim + num_actions, latent_dim)
        self.transform = nn.Linear(latent_dim + num_actions, latent_dim)

    def forward(self, z_r: torch.Tensor, z_t: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.reference(torch.cat([z_r, action], dim=1)) + self.transform(
            torch.cat([z_t, action], dim=1)
        )


def composition_layer(model: VAE) -> LatentComposition:
    """The model's composition layer; a clear error for a model built without one."""
    if isinstance(model.transform, LatentComposition):
        return model.transform
    raise ValueError(
        "composition needs a model with its LatentComposition layer; build the model with "
        "raystudy.models.build (it adds the objective's latent_transform)"
    )


def compose(
    model: VAE, batch: Batch, noise: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(target logits, mu, logvar) of a triple batch; mu and logvar stack the references'
    rows over the transforms'. `noise` False decodes the posterior means."""
    if batch.inputs2 is None or batch.action is None:
        raise ValueError(
            "composition trains on triples: the batch has no transform image or action "
            "(raystudy.data.composition draws them)"
        )
    n = batch.inputs.shape[0]
    # Both images through the encoder in one call: one pass, the same shared weights.
    mu, logvar = model.encode(torch.cat([batch.inputs, batch.inputs2]))
    z = model.reparameterize(mu, logvar) if noise else mu
    h = composition_layer(model)(z[:n], z[n:], batch.action.to(z.dtype))
    return model.decode(h), mu, logvar


class CompositionParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL of both images' codes")


@OBJECTIVES.register("composition")
class Composition(Objective):
    Params = CompositionParams
    loss_weights: ClassVar[tuple[str, ...]] = ("beta",)
    triples: ClassVar[bool] = True
    beta: float

    def latent_transform(self, latent_dim: int, num_factors: int) -> nn.Module:
        return LatentComposition(latent_dim, num_factors)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        logits, mu, logvar = compose(model, batch)
        recon = bernoulli_nll(logits, batch.targets).mean()
        n = batch.inputs.shape[0]
        per_image = gaussian_kl(mu, logvar).sum(dim=1)
        kl = (per_image[:n] + per_image[n:]).mean()
        return LossTerms(recon + kl_weight * self.beta * kl, recon, kl)
