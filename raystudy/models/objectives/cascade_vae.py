"""CascadeVAE (Jeong & Song, ICML 2019, "Learning Discrete and Continuous Factors of Data via
Alternating Disentanglement") as Montero et al. (NeurIPS 2022) train it: their
`InfoCascadeLoss` on the continuous code and their `CascadeVAE` model's discrete code.

Information cascade. Every continuous dimension starts under a high KL weight; every
`release_every` steps one more dimension, in order, drops to a low weight and may start
carrying information:

    loss    = E_q[-log p(x | z, c)] + sum_d beta_d(t) * KL(q(z_d|x) || N(0, 1))
    beta_d(t) = beta_low  if d < floor(t / release_every)   (dimension d released)
                beta_high otherwise

with t the optimiser steps already taken (0 at the first batch) and d = 0..latent_dim-1.
Montero et al.'s loss lowers beta[i] after step (i + 1) * release_every - 1 (ignite's
iteration - 1), so the batch at t sees the same floor(t / release_every) dimensions released.

Discrete code. The decoder reads [z; c], c a code of `categories` (K) entries (the model's
`CategoryCode` head widens the decoder's input by K). Before step `discrete_from`, c = 0 for
every image; from then on each image gets a one-hot c = e_k, chosen with the encoder and
decoder fixed (the discrete step of the paper's alternating minimisation): the posterior
sample z_i is decoded with each of the K categories, u[i, k] = -log p(x_i | z_i, e_k), and the
batch's categories minimise sum_i u[i, c_i] + category_balance * sum_k n_k (n_k - 1) / 2
(`category_matching.balanced_categories`; the authors' min-cost flow, solved exactly). The
loss then trains on the chosen [z; c] (the K trial decodes carry no gradient, as in both
codes). Evaluation, which has no batch to balance, gives each image its argmin_k u[i, k]
(`CategoryCode.complete_code`, through `vae.reconstruction_logits`), as both codes'
evaluation does; so does the decoder test (`training.decoder_retrain`). The head's `discrete`
buffer records that the model trained past `discrete_from`, so that evaluation decodes with
the code the decoder was trained on (0 before, a category after).

Resume: the categories are a function of the model, the batch and the posterior sample, and
the schedule a function of t; the `discrete` buffer is part of the model's state. Nothing else
is kept, so a resumed run continues exactly. Stacks: the matching solver runs on the host,
which `torch.func.vmap` cannot batch, so a stack that trains past `discrete_from` runs its
models one by one ("loop" batching; see `Objective.unbatchable_from`). Cost: from
`discrete_from` on, a step also decodes the batch K times without gradient and waits for the
host's solver (on a GPU, one synchronisation a step); `model.flops_per_step`, counted at step
0, leaves those decodes out.

Representation (metrics, probes, the logged encoder): the continuous posterior mean alone.
The discrete code is not an encoder output: it is chosen by decoding the image K times, so
the encoder-only model that scoring and the logged MLflow model use cannot compute it, and
every objective of a study keeps a code of latent_dim dimensions. Montero et al.'s analysis
appends the argmax category, scaled to [-1, 1], as one more dimension; not done here, so a
factor the model puts in the discrete code (dSprites' shape, say) is invisible to the probes.

Defaults: Montero et al.'s beta = (2, 10) and a release every 20,000 steps, 3 categories from
step 80,000, balance 0.001 (their `lmbda`). `categories: 0` gives the continuous cascade
alone (no head, the decoder reads z), as does a `discrete_from` past the training's end
(the decoder then reads [z; 0]). Reported extras: `released` (dimensions released) and
`category_<k>` (the fraction of the batch given category k; 0 before `discrete_from`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from pydantic import Field, field_validator
from torch import nn
from torch.nn import functional as F

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.category_matching import balanced_categories
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


def released_dimensions(step: int, latent_dim: int, release_every: int) -> int:
    """How many leading code dimensions have their low beta at step t: min(D, t // N)."""
    return min(latent_dim, step // release_every)


def category_nll(
    decoder: nn.Module, z: torch.Tensor, targets: torch.Tensor, k: int
) -> torch.Tensor:
    """u[i, j] = -log p(targets_i | z_i, e_j) for every category j, [B, K] (Bernoulli, summed
    over pixels): the decoder reads the B * K codes [z_i; e_j] in one pass."""
    b = z.shape[0]
    codes = torch.eye(k, dtype=z.dtype, device=z.device).repeat(b, 1)  # row i * K + j: e_j
    logits = decoder(torch.cat([z.repeat_interleave(k, dim=0), codes], dim=1))
    return bernoulli_nll(logits, targets.repeat_interleave(k, dim=0)).view(b, k)


class CategoryCode(nn.Module):
    """The decoder's head: a code [B, D + K] (z and its category code) passes through; a code
    [B, D] alone gets the code the model last trained with: 0 before `discrete_from`, and
    after it category 0 (`decode(z)` has no image to choose from: traversals show category 0;
    reconstructions go through `complete_code`)."""

    def __init__(self, latent_dim: int, categories: int) -> None:
        super().__init__()
        self.latent_dim, self.categories = latent_dim, categories
        self.out_features = latent_dim + categories
        # 1.0 once the model has trained with one-hot codes; a float, so stacks batch it.
        self.register_buffer("discrete", torch.zeros(()))

    def forward(self, code: torch.Tensor) -> torch.Tensor:
        if code.shape[-1] == self.out_features:
            return code
        if code.shape[-1] != self.latent_dim:
            raise ValueError(
                f"CascadeVAE's decoder reads a code of {self.latent_dim} (z) or "
                f"{self.out_features} (z and {self.categories} categories) entries, got "
                f"{code.shape[-1]}"
            )
        # No branch on (or check of) a tensor's value: the same ops run under vmap.
        first = torch.eye(self.categories, dtype=code.dtype, device=code.device)[0]
        return torch.cat([code, (self.discrete * first).expand(code.shape[0], -1)], dim=1)

    @torch.no_grad()
    def complete_code(
        self, z: torch.Tensor, decoder: nn.Module, targets: torch.Tensor
    ) -> torch.Tensor:
        """[z; c] with c each image's best category, argmin_k -log p(target | z, e_k), once
        the model trains with categories (0 before): the evaluation rule of both codes."""
        if z.shape[-1] == self.out_features:
            return z
        if not bool(self.discrete):
            return torch.cat([z, z.new_zeros(z.shape[0], self.categories)], dim=1)
        best = category_nll(decoder, z, targets, self.categories).argmin(dim=1)
        return torch.cat([z, F.one_hot(best, self.categories).to(z.dtype)], dim=1)


def category_head(model: VAE) -> CategoryCode | None:
    """The model's `CategoryCode`, the first module of its decoder, or None."""
    decoder = model.decoder
    if isinstance(decoder, nn.Sequential) and isinstance(decoder[0], CategoryCode):
        return decoder[0]
    return None


class CascadeVAEParams(ObjectiveParams):
    beta_low: float = Field(2.0, ge=0.0, description="KL weight of a released code dimension")
    beta_high: float = Field(10.0, ge=0.0, description="KL weight of a dimension not yet released")
    release_every: int = Field(
        20_000, ge=1, description="steps between releases of one more dimension"
    )
    categories: int = Field(
        3,
        ge=0,
        le=64,
        description="categories of the discrete code the decoder reads beside z (0: no "
        "discrete code; otherwise >= 2)",
    )
    discrete_from: int = Field(
        80_000,
        ge=0,
        description="step from which each image gets the category that reconstructs it best "
        "(a balanced matching per batch); before it the code is 0",
    )
    category_balance: float = Field(
        0.001,
        ge=0.0,
        description="weight of the penalty on pairs of a batch's images that share a "
        "category, sum_k n_k (n_k - 1) / 2, in the matching",
    )

    @field_validator("categories")
    @classmethod
    def _not_one(cls, v: int) -> int:
        if v == 1:
            raise ValueError("0 (no discrete code) or >= 2; one category is no code")
        return v


@OBJECTIVES.register("cascade_vae")
class CascadeVAE(Objective):
    Params = CascadeVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = ("beta_low", "beta_high")
    beta_low: float
    beta_high: float
    release_every: int
    categories: int
    discrete_from: int
    category_balance: float

    def __init__(self, **options: float) -> None:
        super().__init__(**options)
        self.unbatchable_from = self.discrete_from if self.categories else math.inf

    def decoder_head(self, latent_dim: int) -> nn.Module | None:
        return CategoryCode(latent_dim, self.categories) if self.categories else None

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        mu, logvar = model.encode(batch.inputs)
        z = model.reparameterize(mu, logvar)
        counts = torch.zeros(self.categories, device=mu.device, dtype=mu.dtype)
        head = category_head(model)
        if self.categories and step >= self.discrete_from:
            head = self._head(model)
            with torch.no_grad():
                head.discrete.fill_(1.0)
                unary = category_nll(model.decoder, z, batch.targets, self.categories)
            chosen = balanced_categories(unary.double().cpu().numpy(), self.category_balance)
            code = F.one_hot(torch.from_numpy(chosen).to(mu.device), self.categories)
            counts = code.to(mu.dtype).sum(dim=0)
            z = torch.cat([z, code.to(z.dtype)], dim=1)
        elif head is not None:  # before discrete_from: the code reads c = 0
            z = torch.cat([z, z.new_zeros(z.shape[0], head.categories)], dim=1)
        recon = bernoulli_nll(model.decode(z), batch.targets).mean()
        kl_per_dim = gaussian_kl(mu, logvar).mean(dim=0)
        r = released_dimensions(step, kl_per_dim.shape[0], self.release_every)
        # Two sums times two plain weights: a stack of models may hand in per-model tensors.
        penalty = self.beta_low * kl_per_dim[:r].sum() + self.beta_high * kl_per_dim[r:].sum()
        extras = {"released": torch.tensor(float(r), device=mu.device, dtype=mu.dtype)}
        fractions = counts / mu.shape[0]
        extras.update({f"category_{k}": fractions[k] for k in range(self.categories)})
        return LossTerms(recon + kl_weight * penalty, recon, kl_per_dim.sum(), extras)

    def _head(self, model: VAE) -> CategoryCode:
        head = category_head(model)
        if head is None or head.categories != self.categories:
            raise ValueError(
                f"cascade_vae with {self.categories} categories needs a model whose decoder "
                "starts with its CategoryCode of as many; build the model with "
                "raystudy.models.build (it adds the objective's decoder_head)"
            )
        return head
