"""SlowVAE (Klindt, Schott, Sharma, Ustyuzhaninov, Brendel, Bethge & Paiton, ICLR 2021,
"Towards Nonlinear Disentanglement in Natural Data with Temporal Sparse Coding"), one of the
weakly supervised models of Schott et al. (ICLR 2022, Sec. 4).

Training data are pairs (x0, x1) of consecutive "frames". The prior of the first code is
N(0, I); the prior of the transition is sparse, a Laplace of rate lambda (`rate`) per dimension
around the other frame's code (the paper's generative model,
p(z_t | z_{t-1}) = prod_i lambda/2 exp(-lambda |z_t,i - z_{t-1},i|)). Per dimension, with
q = N(mu, sigma^2):

    KL_N      = KL(q || N(0, 1))                                  (the beta-VAE term)
    CE_L(m)   = E_{z ~ N(m, sigma^2)} [-log Laplace(z; 0, lambda)]
              = -log(lambda / 2) + lambda sigma sqrt(2 / pi) exp(-m^2 / (2 sigma^2))
                + lambda m (2 Phi(m / sigma) - 1)
    H         = 0.5 (log sigma^2 + log(2 pi e))

The loss is that of the authors' released code (github.com/bethgelab/slow_disentanglement,
`scripts/solver.py`, read, not copied), which trains "both ways": each frame's posterior
against a Laplace centred on the other frame's mean. With B pairs (2B images):

    kl_laplace = mean_pairs sum_i [CE_L(mu0_i - mu1_i; sigma0_i) + CE_L(mu1_i - mu0_i; sigma1_i)]
                 - mean_images sum_i H_i
    theirs     = 2 * mean_images recon + beta * mean_images KL_N + gamma * kl_laplace
    loss       = theirs / 2

The halving only puts the reconstruction per image, as every raystudy objective reports it;
Adam's steps do not change with a constant factor of the loss (only `train.grad_clip`'s
threshold would read it differently). As in the released code, the Laplace is centred on the
other frame's *mean* (not a sample), and the two cross-entropies carry one entropy between
them (an ELBO symmetrised over the two orders would weigh each frame's entropy as its
cross-entropy):
raystudy keeps the code's weighting, for which its defaults were chosen.

Defaults are the code's (and the settings its `--random-seeds` runs use, found best by UDR):
beta 1, gamma 10, rate 6, with Adam lr 1e-4 and batches of 64 images (32 pairs: raystudy's
`train.batch_size` counts pairs, so 32 matches).

Pairs. The code's loader (`scripts/dataset.py`, `TupleLoader`) draws the second frame in one
of two modes: by default each factor from a discretised Laplace around the first frame's value
(scale log(size) / rate_data, categorical factors such as shape kept, at least one factor
changed); or, with `--data-distribution uniform`, exactly k factors changed to another value,
k drawn uniformly in 1..K-1 per pair with `--data-k -1`. raystudy draws both, inside the split's
encoder set: `data_distribution: uniform` (the default here) is the second mode, the weak
objectives' pairs (`weak.py`, `Split.sample_pairs`), with `k: random` as `--data-k -1`;
`data_distribution: laplace` is the first (`Split.sample_laplace_pairs`), with `rate_data`
as `--rate-data` (default 1, `random` for `-1`) and the categorical factors of
`raystudy.data.splits.pairs.CATEGORICAL_FACTORS` kept. raystudy's default stays the uniform mode,
which its studies trained before the Laplace draw existed.

Reported extra: `kl_laplace` (the term above); `kl` is mean_images KL_N.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import torch
from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams, PairK
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_LOG_2_PI_E = math.log(2.0 * math.pi * math.e)


def laplace_cross_entropy(mean: torch.Tensor, logvar: torch.Tensor, rate: float) -> torch.Tensor:
    """Elementwise E_{z ~ N(mean, exp(logvar))} [-log Laplace(z; 0, 1/rate)] (module doc)."""
    sigma = (0.5 * logvar).exp()
    normal_cdf = torch.special.ndtr(mean / sigma)
    return (
        -math.log(rate / 2.0)
        + rate * sigma * _SQRT_2_OVER_PI * torch.exp(-mean.pow(2) / (2.0 * logvar.exp()))
        + rate * mean * (2.0 * normal_cdf - 1.0)
    )


def gaussian_entropy(logvar: torch.Tensor) -> torch.Tensor:
    """Elementwise entropy of N(., exp(logvar)): 0.5 (logvar + log(2 pi e))."""
    return 0.5 * (logvar + _LOG_2_PI_E)


def slow_kl_laplace(
    mu0: torch.Tensor,
    logvar0: torch.Tensor,
    mu1: torch.Tensor,
    logvar1: torch.Tensor,
    rate: float,
) -> torch.Tensor:
    """The released code's transition term over B pairs (module doc): both frames' Laplace
    cross-entropies, summed over dimensions and averaged over pairs, minus the entropy summed
    over dimensions and averaged over the 2B images."""
    cross = laplace_cross_entropy(mu0 - mu1, logvar0, rate) + laplace_cross_entropy(
        mu1 - mu0, logvar1, rate
    )
    entropy = gaussian_entropy(torch.cat([logvar0, logvar1])).sum(dim=1).mean()
    return cross.sum(dim=1).mean() - entropy


class SlowVAEParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL to N(0, I)")
    gamma: float = Field(10.0, ge=0.0, description="weight of the Laplace transition term")
    rate: float = Field(
        6.0, gt=0.0, description="rate lambda of the Laplace transition prior (larger: sparser)"
    )
    k: Annotated[int, Field(ge=1, strict=True)] | Literal["random"] = Field(
        "random",
        description="factors that differ within a pair (data_distribution uniform); random: "
        "uniform in 1..K-1 per pair",
    )
    data_distribution: Literal["uniform", "laplace"] = Field(
        "uniform",
        description="how a pair's second frame is drawn: uniform (k factors changed) or "
        "laplace (each factor from a Laplace around the first's value, the release's default)",
    )
    rate_data: Annotated[float, Field(gt=0.0)] | Literal["random"] = Field(
        1.0,
        description="rate of the laplace pairs' transitions (larger: closer frames); random: "
        "uniform in [1, 10] per pair",
    )


@OBJECTIVES.register("slow_vae")
class SlowVAE(Objective):
    Params = SlowVAEParams
    pairs: ClassVar[bool] = True
    loss_weights: ClassVar[tuple[str, ...]] = ("beta", "gamma")
    beta: float
    gamma: float
    rate: float
    k: PairK
    data_distribution: str
    rate_data: float | str

    @property
    def pair_k(self) -> PairK:
        return "laplace" if self.data_distribution == "laplace" else self.k

    @property
    def laplace_rate(self) -> float | None:
        return None if self.rate_data == "random" else float(self.rate_data)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        inputs2, targets2 = self.second_images(batch)
        n = batch.inputs.shape[0]
        # Both frames through each network in one call: half the kernel launches of two.
        both = torch.cat([batch.inputs, inputs2]), torch.cat([batch.targets, targets2])
        mu, logvar, _, recon, kl = elbo_terms(model, *both)
        kl_laplace = slow_kl_laplace(mu[:n], logvar[:n], mu[n:], logvar[n:], self.rate)
        regulariser = 0.5 * (self.beta * kl + self.gamma * kl_laplace)
        return LossTerms(recon + kl_weight * regulariser, recon, kl, {"kl_laplace": kl_laplace})
