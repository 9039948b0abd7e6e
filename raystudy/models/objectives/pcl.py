"""Permutation-contrastive learning, PCL (Hyvarinen & Morioka, AISTATS 2017, "Nonlinear ICA of
Temporally Dependent Stationary Sources"), one of the weakly supervised models of Schott et al.
(ICLR 2022, Sec. 4).

A logistic regression tells true pairs of consecutive frames y = (x1, x2) from pairs whose
second frame is another pair's, y* = (x1, x2*) (the paper's contrastive task: the time index
of the lagged frame permuted). Its regression function is built on the code h = encoder(x) (the
form of the paper's Theorem 1, r(y) = sum_i B_i(h_i(x1), h_i(x2)) + sum_i Bbar_i(h_i(x1)), as
the authors' PyTorch release, `pcl/pcl.py`, writes it; read, not copied):

    r(y) = - sum_i |w1_i z_i(x1) + w2_i z_i(x2) + b_i| + a sum_i z_i(x1)^2 + m

w1, w2, b per dimension (initialised 1, -1, 0), a >= 0 (initialised 1) and m (0) learnt with
the encoder; z is h standardised per dimension over the batch's 2B codes, the authors'
batch normalisation of h without its running averages or affine part (an affine map per
dimension that w1, w2, b absorb). The loss is the binary cross-entropy of sigmoid(r) against
1 for the B true pairs and 0 for the B permuted ones:

    pcl  = mean over 2B of BCE(r(y), 1) and BCE(r(y*), 0)
    loss = pcl + mean_images -log p(x | sg[h(x)])

The second term trains a decoder on the detached code (as `supervised` does), so that eval/*
and the reconstruction figures work; no gradient of it reaches the encoder. The representation
is h, as the authors' h before normalisation: a readout cannot tell the two apart.

Where raystudy differs, and why:
- the permuted second frames are the batch's other second frames (x2 of pair i-1 for pair i,
  cyclically), not fresh draws: the batch is already a uniform draw, and a fixed shift draws no
  random numbers, so PCL stacks (`raystudy.training.stacked`);
- a >= 0 is kept by a softplus of a free parameter, not by clamping after each step (the loop
  has no post-step hook);
- the parameters of r live in the model (the encoder's head, `PCLHead`), so that they train,
  checkpoint and stack with it; the encoder's log-variance layer is dropped and the posterior
  is the code with a fixed sd of 0.01 (`CODE_LOGVAR`), for the paths that sample one;
- the code is the encoder of the architecture the spec names (`vanilla_cnn` in
  `schott2022.yaml`, as for SlowVAE); the authors' release uses an MLP with max-out units on
  vector data.

Pairs are the weak objectives' (`weak.py`): the second frame differs from the first in `k`
factors (`random`: 1..K-1 per pair, the default), drawn inside the split's encoder set, not
consecutive frames of a sequence; `slow_vae.py` says how SlowVAE's release draws its pairs and
which of its modes these match.

Reported extras: `pcl` (the cross-entropy) and `pcl_accuracy` (the share of the 2B pairs the
regression classifies right); `kl` is reported as 0.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import torch
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams, PairK
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll

#: The log-variance of the posterior the code is given: sd 0.01, so that a posterior sample
#: (eval/*, reconstructions) decodes essentially the code itself.
CODE_LOGVAR = 2.0 * math.log(0.01)
#: Batch normalisation's epsilon: the standardised code's variance floor.
NORM_EPS = 1e-5


class PCLHead(nn.Module):
    """The encoder's head under PCL: passes the code through (with the fixed `CODE_LOGVAR`)
    and holds the parameters of the regression function r (module doc), which the objective
    reads (`logits`)."""

    def __init__(self, latent_dim: int) -> None:
        super().__init__()
        self.in_features = latent_dim
        self.w1 = nn.Parameter(torch.ones(latent_dim))
        self.w2 = nn.Parameter(-torch.ones(latent_dim))
        self.bias = nn.Parameter(torch.zeros(latent_dim))
        # softplus(log(e - 1)) = 1: the authors' initial a.
        self.a_free = nn.Parameter(torch.full((), math.log(math.e - 1.0)))
        self.offset = nn.Parameter(torch.zeros(()))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return features, torch.full_like(features, CODE_LOGVAR)

    def logits(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        """r(y) [B] of pairs of standardised codes (module doc)."""
        q = (self.w1 * z1 + self.w2 * z2 + self.bias).abs().sum(dim=1)
        return -q + F.softplus(self.a_free) * z1.pow(2).sum(dim=1) + self.offset


def standardise(h: torch.Tensor) -> torch.Tensor:
    """Each dimension to mean 0, variance 1 over the batch (batch normalisation's training
    statistics, biased variance, no affine part)."""
    mean = h.mean(dim=0, keepdim=True)
    var = h.var(dim=0, unbiased=False, keepdim=True)
    return (h - mean) / (var + NORM_EPS).sqrt()


def permutation_contrast(
    head: PCLHead, h1: torch.Tensor, h2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(pcl, accuracy) of B true pairs of codes and the B pairs that take the next pair's
    second code (module doc)."""
    z = standardise(torch.cat([h1, h2]))
    n = h1.shape[0]
    z1, z2 = z[:n], z[n:]
    true = head.logits(z1, z2)
    permuted = head.logits(z1, torch.roll(z2, shifts=1, dims=0))
    logits = torch.cat([true, permuted])
    labels = torch.cat([torch.ones_like(true), torch.zeros_like(permuted)])
    pcl = F.binary_cross_entropy_with_logits(logits, labels)
    accuracy = ((logits > 0).to(labels.dtype) == labels).to(labels.dtype).mean()
    return pcl, accuracy


class PCLParams(ObjectiveParams):
    k: Annotated[int, Field(ge=1, strict=True)] | Literal["random"] = Field(
        "random",
        description="factors that differ within a pair; random: uniform in 1..K-1 per pair",
    )


@OBJECTIVES.register("pcl")
class PCL(Objective):
    Params = PCLParams
    pairs: ClassVar[bool] = True
    k: PairK

    @property
    def pair_k(self) -> PairK:
        return self.k

    def encoder_head(self, latent_dim: int) -> nn.Module:
        return PCLHead(latent_dim)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        inputs2, targets2 = self.second_images(batch)
        n = batch.inputs.shape[0]
        if n < 2:
            raise ValueError("PCL needs at least 2 pairs a batch: a permuted pair is another's")
        head = getattr(model.encoder, "head", None)
        if not isinstance(head, PCLHead):
            raise ValueError("PCL needs a model built with its encoder head (PCLHead)")
        h, _ = model.encode(torch.cat([batch.inputs, inputs2]))
        pcl, accuracy = permutation_contrast(head, h[:n], h[n:])
        targets = torch.cat([batch.targets, targets2])
        recon = bernoulli_nll(model.decode(h.detach()), targets).mean()
        kl = torch.zeros((), device=recon.device, dtype=recon.dtype)
        return LossTerms(pcl + recon, recon, kl, {"pcl": pcl, "pcl_accuracy": accuracy})
