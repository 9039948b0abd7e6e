"""Commutative Lie Group VAE (Zhu, Xu & Tao, ICML 2021, "Commutative Lie Group VAE for
Disentanglement Learning"), as Montero et al. (NeurIPS 2022) train it (`LieVAELoss`).

The code z ~ q(z|x) [B, D] becomes a group element through a learnt Lie algebra basis
A_1..A_D (m x m matrices, parameters of the model, see `LieGroupExp`); the decoder reads the
group element, flattened to m^2 features:

    g(z) = exp(sum_i z_i A_i),    x^ = decoder(vec(g(z)))

    loss = E_q[-log p(x|vec g(z))] + beta * KL(q(z|x) || N(0, I))
           + lambda_hessian * 1/D^2 sum_{i != j} ||A_i A_j||_F^2
           + lambda_commute * 1/D^2 sum_{i != j} ||A_i A_j - A_j A_i||_F^2

The first basis term is the paper's stand-in for a Hessian penalty on the decoder (Zhu et al.,
Sec. 4: with A_i A_j = 0 for i != j, each z_i moves g along its own one-parameter subgroup and
the basis commutes); the 1/D^2 (a mean over all (i, j), the zero diagonal included) is the
authors' normalisation, to which their weight 40 is tuned. The second is the commutator
penalty, weight 0 in Montero et al. (their code subtracts the transposed product rather than
A_j A_i; the commutator is what the paper names). Defaults: Montero et al.'s 10 x 10 group
(one subgroup of size 100), lambda_hessian = 40, lambda_commute = 0, and a KL weight of 1
(their gamma = 1 with capacity 0). Not modelled: their encoder's group-feature head with its
reconstruction term (weight 0.1) and the decoder reading those features on 20% of the
batches. Reported extras: `hessian`, `commute`.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl

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


def basis_penalties(basis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(1/D^2 sum_{i != j} ||A_i A_j||_F^2, 1/D^2 sum_{i != j} ||A_i A_j - A_j A_i||_F^2)."""
    d = basis.shape[0]
    products = torch.einsum("iab,jbc->ijac", basis, basis)  # [i, j] = A_i A_j
    off_diagonal = 1.0 - torch.eye(d, dtype=basis.dtype, device=basis.device)
    hessian = (products.pow(2).sum(dim=(2, 3)) * off_diagonal).sum() / d**2
    commutators = products - products.transpose(0, 1)  # zero on the diagonal
    commute = commutators.pow(2).sum(dim=(2, 3)).sum() / d**2
    return hessian, commute


def lie_layer(model: VAE) -> LieGroupExp:
    """The model's exponential map: the first module of its decoder."""
    decoder = model.decoder
    if isinstance(decoder, nn.Sequential) and isinstance(decoder[0], LieGroupExp):
        return decoder[0]
    raise ValueError(
        "lie_group_vae needs a model whose decoder starts with its LieGroupExp; build the "
        "model with raystudy.models.build (it adds the objective's decoder_head)"
    )


@OBJECTIVES.register("lie_group_vae")
class LieGroupVAE(Objective):
    hyperparameters: ClassVar[tuple[str, ...]] = (
        "beta",
        "lambda_hessian",
        "lambda_commute",
        "group_matrix_dim",
    )
    loss_weights: ClassVar[tuple[str, ...]] = ("beta", "lambda_hessian", "lambda_commute")

    def __init__(
        self,
        beta: float = 1.0,
        lambda_hessian: float = 40.0,
        lambda_commute: float = 0.0,
        group_matrix_dim: int = 10,
    ) -> None:
        if group_matrix_dim < 1:
            raise ValueError(f"group_matrix_dim must be >= 1, got {group_matrix_dim}")
        self.beta = float(beta)
        self.lambda_hessian = float(lambda_hessian)
        self.lambda_commute = float(lambda_commute)
        self.group_matrix_dim = int(group_matrix_dim)

    def decoder_head(self, latent_dim: int) -> nn.Module:
        return LieGroupExp(latent_dim, self.group_matrix_dim)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        logits, mu, logvar = model(batch.inputs)
        recon = bernoulli_nll(logits, batch.targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        hessian, commute = basis_penalties(lie_layer(model).basis)
        penalty = self.beta * kl + self.lambda_hessian * hessian + self.lambda_commute * commute
        extras = {"hessian": hessian, "commute": commute}
        return LossTerms(recon + kl_weight * penalty, recon, kl, extras)
