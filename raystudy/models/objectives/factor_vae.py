"""FactorVAE (Kim & Mnih, ICML 2018, "Disentangling by Factorizing", Eq. 2 and Alg. 2).

    loss = E_q[-log p(x|z)] + KL(q(z|x) || N(0, I)) + gamma * TC
    TC  ~= E_q(z)[log D(z) / (1 - D(z))] = mean_i (logit_real(z_i) - logit_perm(z_i))

A discriminator D tells samples z_i ~ q(z|x_i) ("real", class 0) from codes whose every
dimension was permuted independently across the batch ("permuted", class 1): the permuted
codes are samples of prod_d q(z_d), so the log-odds estimate the total correlation. D is
trained alongside, with its own optimiser, to minimise the cross-entropy

    aux_loss = -0.5 (mean_i log D(z_i)[real] + mean_i log D(perm(z)_i)[permuted])

on the same batch's codes, detached from the encoder. The two updates use the same forward
pass (the VAE's gradient sees D before its update), as disentanglement_lib's `FactorVAE`,
which also permutes the batch's own codes rather than those of a second batch as Kim & Mnih
do. D is disentanglement_lib's `fc_discriminator` (Kim & Mnih App. A): 6 dense layers of 1000
units with leaky ReLU (slope 0.2) and 2 logits; its optimiser is the study's Adam with learning
rate 1e-4, betas (0.5, 0.9). disentanglement_lib clips D's probabilities to [1e-6, 1 - 1e-6]
in the cross-entropy; log-softmax here keeps it finite without clipping. Default gamma 10;
the study sweeps {10, 20, 30, 40, 50, 100}. Reported extras: `tc` and `discriminator` (the
cross-entropy; log 2 = 0.69 is chance).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import torch
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms

DISCRIMINATOR_WIDTH = 1000
DISCRIMINATOR_DEPTH = 6
DISCRIMINATOR_LR = 1e-4
DISCRIMINATOR_BETAS = (0.5, 0.9)


class Discriminator(nn.Module):
    """MLP from a code [B, D] to the logits [B, 2] of (real, permuted)."""

    def __init__(self, latent_dim: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = latent_dim
        for _ in range(DISCRIMINATOR_DEPTH):
            layers += [nn.Linear(width, DISCRIMINATOR_WIDTH), nn.LeakyReLU(0.2)]
            width = DISCRIMINATOR_WIDTH
        layers.append(nn.Linear(width, 2))
        self.net = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


def permute_dims(z: torch.Tensor) -> torch.Tensor:
    """Each column of z [B, D] shuffled independently across the batch."""
    order = torch.argsort(torch.rand(z.shape, device=z.device), dim=0)
    return torch.gather(z, 0, order)


@contextmanager
def _frozen(module: nn.Module) -> Iterator[None]:
    """No parameter gradients inside (the input's gradient still flows): the VAE's backward
    pass then skips the discriminator's weight gradients, which its update would discard."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


class FactorVAEParams(ObjectiveParams):
    gamma: float = Field(10.0, gt=0.0, description="weight of the TC")


@OBJECTIVES.register("factor_vae")
class FactorVAE(Objective):
    Params = FactorVAEParams
    #: The discriminator and its optimiser are per model, outside the batched parameters.
    stackable: ClassVar[bool] = False
    gamma: float

    def __init__(self, **options: float) -> None:
        super().__init__(**options)
        self.discriminator: Discriminator | None = None
        self.optimizer: torch.optim.Optimizer | None = None

    def setup(self, model: VAE, device: torch.device) -> None:
        self.discriminator = Discriminator(model.latent_dim).to(device)
        self.optimizer = torch.optim.Adam(
            self.discriminator.parameters(), lr=DISCRIMINATOR_LR, betas=DISCRIMINATOR_BETAS
        )

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        if self.discriminator is None:
            self.setup(model, batch.inputs.device)
        assert self.discriminator is not None
        _, _, z, recon, kl = elbo_terms(model, batch.inputs, batch.targets)
        with _frozen(self.discriminator):
            logits = self.discriminator(z)
        tc = (logits[:, 0] - logits[:, 1]).mean()
        codes = z.detach()
        both = self.discriminator(torch.cat([codes, permute_dims(codes)]))
        b = codes.shape[0]
        log_p = F.log_softmax(both, dim=1)
        aux = -0.5 * (log_p[:b, 0].mean() + log_p[b:, 1].mean())
        loss = recon + kl_weight * (kl + self.gamma * tc)
        return LossTerms(loss, recon, kl, {"tc": tc, "discriminator": aux}, aux_loss=aux)

    def auxiliary_step(self, terms: LossTerms) -> None:
        if self.optimizer is None or terms.aux_loss is None:
            raise RuntimeError("factor_vae: auxiliary_step before a loss was computed")
        self.optimizer.zero_grad(set_to_none=True)
        terms.aux_loss.backward()
        self.optimizer.step()

    def state_dict(self) -> dict[str, Any]:
        if self.discriminator is None or self.optimizer is None:
            return {}
        return {
            "discriminator": self.discriminator.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.discriminator is None or self.optimizer is None:
            raise RuntimeError("factor_vae: call setup(model, device) before load_state_dict")
        self.discriminator.load_state_dict(state["discriminator"])
        self.optimizer.load_state_dict(state["optimizer"])
