"""The Gaussian-encoder / Bernoulli-decoder VAE shared by every objective.

Kingma & Welling (2014): q(z|x) = N(mu(x), diag(exp(logvar(x)))), p(x|z) = Bernoulli(sigmoid(f(z))).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F


class _NoiseTape:
    """Pre-drawn standard normals that stand in for `torch.randn_like`, in order of use."""

    def __init__(self, draws: list[torch.Tensor] | None) -> None:
        self.draws = draws  # None: record the shapes asked for instead of replaying
        self.shapes: list[tuple[int, ...]] = []
        self.used = 0

    def next_like(self, t: torch.Tensor) -> torch.Tensor:
        if self.draws is None:
            self.shapes.append(tuple(t.shape))
            return torch.zeros_like(t)
        if self.used >= len(self.draws):
            raise RuntimeError(
                f"the objective drew more posterior samples ({self.used + 1}) than were "
                f"recorded for it ({len(self.draws)})"
            )
        eps = self.draws[self.used]
        self.used += 1
        return eps


_tape: _NoiseTape | None = None


@contextmanager
def noise_tape(draws: list[torch.Tensor] | None) -> Iterator[_NoiseTape]:
    """Inside, `standard_normal_like` replays `draws` in order (or, with None, records the
    shapes it is asked for and returns zeros).

    Several models trained as one (`raystudy.training.stacked`) cannot each draw from their own
    random stream inside `torch.func.vmap`; the loop draws each model's posterior noise
    outside, from that model's generator in the order a lone run would, and replays it here.
    """
    global _tape
    previous, _tape = _tape, _NoiseTape(draws)
    try:
        yield _tape
    finally:
        _tape = previous


def standard_normal_like(t: torch.Tensor) -> torch.Tensor:
    """N(0, 1) noise shaped like `t`: from torch's generator, or the active `noise_tape`."""
    return torch.randn_like(t) if _tape is None else _tape.next_like(t)


def gaussian_kl(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """Per-dimension KL(N(mu, exp(logvar)) || N(0, 1)) = 0.5 (mu^2 + var - logvar - 1)."""
    return 0.5 * (mu.pow(2) + logvar.exp() - logvar - 1.0)


def gaussian_kl_between(
    mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
) -> torch.Tensor:
    """Per-dimension KL(N1 || N2) of diagonal Gaussians.

    0.5 (logvar2 - logvar1 + (var1 + (mu1 - mu2)^2) / var2 - 1).
    """
    return 0.5 * (logvar2 - logvar1 + (logvar1.exp() + (mu1 - mu2).pow(2)) / logvar2.exp() - 1.0)


def gaussian_log_density(z: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """Elementwise log N(z; mu, exp(logvar)) = -0.5 (log 2 pi + logvar + (z - mu)^2 / var)."""
    return -0.5 * (math.log(2.0 * math.pi) + logvar + (z - mu).pow(2) * (-logvar).exp())


def bernoulli_nll(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-image negative log-likelihood of `target` under Bernoulli(sigmoid(logits)), in nats.

    Summed over pixels and channels, as disentanglement_lib's `bernoulli_loss`.
    """
    nll = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return nll.flatten(1).sum(dim=1)


class NoImageEncoder(nn.Module):
    """The encoder of a model whose code is the ground-truth factors (gt_decoder): no image
    maps to that code, so a path that tries is a mistake, and says so at once instead of
    scoring an untrained network."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise RuntimeError(
            "this model's code is the ground-truth factors (gt_decoder): it has no image "
            "encoder; decode the normalised factors of the images instead "
            "(raystudy.scoring.encode_means gives them)"
        )


class GaussianEncoder(nn.Module):
    """An encoder made of a `features` network, ending in `width` features, and one linear
    head each for the posterior's mean and log-variance (built in that order)."""

    def __init__(self, features: nn.Module, width: int, latent_dim: int) -> None:
        super().__init__()
        self.features = features
        self.mean = nn.Linear(width, latent_dim)
        self.logvar = nn.Linear(width, latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(x)
        return self.mean(h), self.logvar(h)


def reconstruction_logits(model: nn.Module, z: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The logits with which `model` reconstructs `targets` from their codes `z`:
    ``model.decode(z)``, unless its decoder's head completes the code per image from the image
    itself (the head's ``complete_code(z, decoder, targets)``: CascadeVAE's discrete code).
    Any module with a ``decode`` will do; only a `VAE`'s decoder can have such a head."""
    decoder = getattr(model, "decoder", None)
    head = decoder[0] if isinstance(decoder, nn.Sequential) else None
    complete = getattr(head, "complete_code", None)
    return model.decode(z if complete is None else complete(z, decoder, targets))


class HeadedEncoder(nn.Module):
    """An architecture's encoder whose first output feeds an objective's encoder head
    (`Objective.encoder_head`): x -> features = backbone(x)[0] -> (mu, logvar) = head(features).

    LieGroupVAE's encoder is one: its backbone ends in the group features, from which the head
    computes the posterior. The backbone's own log-variance layer is left out (no parameters
    that never train), so a module that asked for it gets an empty tensor.
    """

    def __init__(self, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        if hasattr(backbone, "logvar"):
            backbone.logvar = _NoOutput()
        self.backbone = backbone
        self.head = head

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)[0]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.features(x))


class _NoOutput(nn.Module):
    """Stands in for a backbone layer whose output nothing reads: [B, 0], no parameters."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h[:, :0]


class VAE(nn.Module):
    """An encoder producing (mu, logvar) and a decoder producing pixel logits.

    ``code_is_ground_truth`` marks the gt_decoder reference: its representation is the
    normalised ground-truth factors and its encoder a :class:`NoImageEncoder`. ``transform``
    is an objective's layer that combines codes before decoding (the composition objective's,
    `Objective.latent_transform`); None for every other model.
    """

    def __init__(
        self,
        encoder: nn.Module,
        decoder: nn.Module,
        latent_dim: int,
        code_is_ground_truth: bool = False,
        transform: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.latent_dim = latent_dim
        self.code_is_ground_truth = code_is_ground_truth
        self.transform = transform

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encoder(x)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    @staticmethod
    def reparameterize(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + standard_normal_like(mu) * (0.5 * logvar).exp()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encode(x)
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


class ElboTerms(NamedTuple):
    """One pass of :func:`elbo_terms`: the posterior, its sample and the two ELBO terms."""

    mu: torch.Tensor
    logvar: torch.Tensor
    z: torch.Tensor
    #: E_q[-log p(x|z)] at one sample per image, mean over the batch (Bernoulli, in nats).
    recon: torch.Tensor
    #: KL(q(z|x) || N(0, I)) summed over code dimensions, mean over the batch.
    kl: torch.Tensor


def elbo_terms(model: VAE, inputs: torch.Tensor, targets: torch.Tensor) -> ElboTerms:
    """The two terms of the negative ELBO (Kingma & Welling 2014) of `model` on a batch:
    encode `inputs`, draw z = mu + eps * sigma once per image, decode z against `targets`."""
    mu, logvar = model.encode(inputs)
    z = model.reparameterize(mu, logvar)
    recon = bernoulli_nll(model.decode(z), targets).mean()
    kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
    return ElboTerms(mu, logvar, z, recon, kl)
