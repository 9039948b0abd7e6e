"""Commutative Lie Group VAE (Zhu, Xu & Tao, ICML 2021, "Commutative Lie Group VAE for
Disentanglement Learning"), as Montero et al. (NeurIPS 2022) train it (`LieVAELoss` on their
`LieGroupVAE` model).

The encoder ends in group features g_E(x) [B, m^2] (the architecture's encoder with m^2
outputs), from which two MLPs m^2 -> 4 m^2 -> D (ReLU; `GroupPosterior`, the model's encoder
head) give the posterior mean and log-variance. The code z ~ q(z|x) [B, D] becomes a group
element through a learnt Lie algebra basis A_1..A_D (m x m matrices, parameters of the model,
see `LieGroupExp`); the decoder reads the group element, flattened to m^2 features:

    g(z) = exp(sum_i z_i A_i),    x^ = decoder(vec(g(z)))   (decoder(g_E(x)) on some steps)

    loss = E_q[-log p(x|x^)] + beta * KL(q(z|x) || N(0, I))
           + lambda_group_recon * ||g_E(x) - vec g(z)||^2          (mean over the batch)
           + lambda_hessian * 1/D^2 sum_{i != j} ||A_i A_j||_F^2
           + lambda_commute * 1/D^2 sum_{i != j} ||A_i A_j - A_j A_i||_F^2

The group-feature term ties the encoder's features to the group element its code maps to
(no gradient is stopped on either side, as in both codes). On a fraction
`encoder_features_prob` of the training steps the decoder reads g_E(x) instead of vec g(z)
(the recon term is then that reconstruction), so the decoder learns to render the encoder's
features too. Both codes draw that coin from the global numpy stream per batch; here it is a
function of the step alone (`decodes_encoder_features`: a generator seeded with (a fixed seed,
t)), so a resumed run draws the same coins, and every model of a stack (and every seed of a
study) sees the same steps.

The first basis term is the paper's stand-in for a Hessian penalty on the decoder (Zhu et al.,
Sec. 4: with A_i A_j = 0 for i != j, each z_i moves g along its own one-parameter subgroup and
the basis commutes); the 1/D^2 (a mean over all (i, j), the zero diagonal included) is the
authors' normalisation, to which their weight 40 is tuned. The second is the commutator
penalty, weight 0 in Montero et al. (their code subtracts the transposed product rather than
A_j A_i; the commutator is what the paper names). Every term but the image reconstruction is
scaled by the KL warm-up factor, as in every objective here.

Defaults: Montero et al.'s 10 x 10 group (one subgroup of size 100), lambda_hessian = 40,
lambda_commute = 0, lambda_group_recon = 0.1 (their hy_rec), encoder_features_prob = 0.2
(their prob_forward) and a KL weight of 1 (their gamma = 1 with capacity 0). The
representation scored is the posterior mean z (Montero et al.'s `embed` returns the group
element of the mean, which their analysis projects back to D dimensions by PCA: not modelled).
Reported extras: `hessian`, `commute`, `group_recon` (the unweighted group-feature term) and
`encoder_features` (1 on a step whose decoder read g_E(x): its mean is the fraction of steps).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from pydantic import Field
from torch import nn

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, HeadedEncoder, bernoulli_nll, gaussian_kl

#: The sd of the basis' initial entries (Zhu et al.'s `lie_alg_init_scale`): g starts near I.
BASIS_INIT_SD = 0.001


class LieGroupExp(nn.Module):
    """z [B, D] -> vec(exp(sum_i z_i A_i)) [B, m^2], with a learnt basis A [D, m, m]."""

    def __init__(self, latent_dim: int, matrix_dim: int) -> None:
        super().__init__()
        self.basis = nn.Parameter(BASIS_INIT_SD * torch.randn(latent_dim, matrix_dim, matrix_dim))
        self.out_features = matrix_dim * matrix_dim

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        algebra = torch.einsum("bd,dij->bij", z, self.basis)
        return torch.linalg.matrix_exp(algebra).flatten(1)


class GroupPosterior(nn.Module):
    """The encoder head: group features [B, m^2] -> (mu, logvar) [B, D], each through its own
    MLP m^2 -> 4 m^2 -> D with a ReLU (Zhu et al.'s `to_means` / `to_logvar`)."""

    def __init__(self, latent_dim: int, matrix_dim: int) -> None:
        super().__init__()
        n = matrix_dim * matrix_dim
        self.in_features = n
        self.mean = nn.Sequential(nn.Linear(n, 4 * n), nn.ReLU(), nn.Linear(4 * n, latent_dim))
        self.logvar = nn.Sequential(nn.Linear(n, 4 * n), nn.ReLU(), nn.Linear(4 * n, latent_dim))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean(features), self.logvar(features)


#: Seeds the per-step coin of `decodes_encoder_features` (any fixed value; the same in every
#: run, so the coins are a function of the step).
ENCODER_FEATURES_SEED = 20210718


def decodes_encoder_features(step: int, prob: float) -> bool:
    """Whether the decoder reads the encoder's group features at step t: u_t < prob, with u_t
    the first uniform of numpy's generator seeded with (ENCODER_FEATURES_SEED, t)."""
    if prob <= 0.0:
        return False
    return bool(np.random.default_rng([ENCODER_FEATURES_SEED, step]).random() < prob)


def basis_penalties(basis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(1/D^2 sum_{i != j} ||A_i A_j||_F^2, 1/D^2 sum_{i != j} ||A_i A_j - A_j A_i||_F^2)."""
    d = basis.shape[0]
    products = torch.einsum("iab,jbc->ijac", basis, basis)  # [i, j] = A_i A_j
    off_diagonal = 1.0 - torch.eye(d, dtype=basis.dtype, device=basis.device)
    hessian = (products.pow(2).sum(dim=(2, 3)) * off_diagonal).sum() / d**2
    commutators = products - products.transpose(0, 1)  # zero on the diagonal
    commute = commutators.pow(2).sum(dim=(2, 3)).sum() / d**2
    return hessian, commute


def group_encoder(model: VAE) -> HeadedEncoder:
    """The model's encoder: an architecture's encoder ending in group features, and its
    `GroupPosterior` head."""
    encoder = model.encoder
    if isinstance(encoder, HeadedEncoder) and isinstance(encoder.head, GroupPosterior):
        return encoder
    raise ValueError(
        "lie_group_vae needs a model whose encoder ends in group features and a GroupPosterior "
        "head; build the model with raystudy.models.build (it adds the objective's "
        "encoder_head)"
    )


def lie_layer(model: VAE) -> LieGroupExp:
    """The model's exponential map: the first module of its decoder."""
    decoder = model.decoder
    if isinstance(decoder, nn.Sequential) and isinstance(decoder[0], LieGroupExp):
        return decoder[0]
    raise ValueError(
        "lie_group_vae needs a model whose decoder starts with its LieGroupExp; build the "
        "model with raystudy.models.build (it adds the objective's decoder_head)"
    )


class LieGroupVAEParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL")
    lambda_hessian: float = Field(
        40.0, ge=0.0, description="weight of sum_{i != j} ||A_i A_j||^2 / D^2 on the basis"
    )
    lambda_commute: float = Field(
        0.0, ge=0.0, description="weight of sum_{i != j} ||A_i A_j - A_j A_i||^2 / D^2"
    )
    lambda_group_recon: float = Field(
        0.1, ge=0.0, description="weight of ||encoder group features - vec exp(sum z_i A_i)||^2"
    )
    encoder_features_prob: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="fraction of training steps (drawn per step from a fixed seed) on which "
        "the decoder reads the encoder's group features instead",
    )
    group_matrix_dim: int = Field(
        10, ge=1, le=32, description="m of the m x m group element the decoder reads (m^2 features)"
    )


@OBJECTIVES.register("lie_group_vae")
class LieGroupVAE(Objective):
    Params = LieGroupVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = (
        "beta",
        "lambda_hessian",
        "lambda_commute",
        "lambda_group_recon",
    )

    beta: float
    lambda_hessian: float
    lambda_commute: float
    lambda_group_recon: float
    encoder_features_prob: float
    group_matrix_dim: int

    def decoder_head(self, latent_dim: int) -> nn.Module:
        return LieGroupExp(latent_dim, self.group_matrix_dim)

    def encoder_head(self, latent_dim: int) -> nn.Module:
        return GroupPosterior(latent_dim, self.group_matrix_dim)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        encoder = group_encoder(model)
        features = encoder.features(batch.inputs)
        mu, logvar = encoder.head(features)
        group = lie_layer(model)(model.reparameterize(mu, logvar))
        from_features = decodes_encoder_features(step, self.encoder_features_prob)
        logits = model.decoder[1:](features if from_features else group)
        recon = bernoulli_nll(logits, batch.targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        group_recon = (features - group).pow(2).sum(dim=1).mean()
        hessian, commute = basis_penalties(lie_layer(model).basis)
        penalty = (
            self.beta * kl
            + self.lambda_group_recon * group_recon
            + self.lambda_hessian * hessian
            + self.lambda_commute * commute
        )
        extras = {
            "hessian": hessian,
            "commute": commute,
            "group_recon": group_recon,
            "encoder_features": torch.tensor(float(from_features), device=mu.device),
        }
        return LossTerms(recon + kl_weight * penalty, recon, kl, extras)
