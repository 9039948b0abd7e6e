"""Unsupervised scores of a trained VAE on held-out images: ``eval/elbo``, ``eval/recon``,
``eval/kl``, ``eval/tc`` and ``eval/active_units``.

ELBO(x) = E_q(z|x)[log p(x|z)] - KL(q(z|x) || p(z)) (Kingma & Welling 2014), estimated with
one posterior sample per image, in nats per image; recon is the negative log-likelihood term
(Bernoulli, summed over pixels) and kl the KL term. Held-out images are fresh renders never
used for training. A fixed generator seeds the posterior samples, so two models are scored on
the same noise.

tc is the total correlation of the aggregate posterior q(z) = 1/N sum_n q(z|x_n) over the
held-out images, KL(q(z) || prod_j q(z_j)) (Watanabe 1960; the quantity beta-TCVAE and
FactorVAE penalise), in nats. Estimator: the full-sample Monte Carlo estimate of Chen et al.
2018 ("Isolating Sources of Disentanglement in VAEs", section 4.1 with the whole evaluation
set as the batch, so no minibatch weighting): with z_i the posterior sample of image i,

    tc = 1/N sum_i [ log 1/N sum_n q(z_i | x_n) - sum_j log 1/N sum_n q(z_ij | x_n) ].

It is consistent as N grows but biased for finite N: the n = i term is always there, so
for posteriors that do not overlap at all the estimate saturates at (D - 1) log N. Compare
models on the same N (``EvaluationConfig.num_eval_images``). Cost O(N^2 D), run in chunks:
~0.1 s at N = 1000, D = 10.

active_units counts the latent dimensions whose posterior mean varies across the data,
Var_x(E_q(z|x)[z_j]) > 0.01 (Burda et al. 2016, "Importance Weighted Autoencoders",
section 5.2), with the variance over the held-out images (ddof = 0).

A model whose code is the ground-truth factors (gt_decoder) has no posterior: it is scored by
:func:`decoder_scores` on the true factors f of the images, recon = -log p(x | f), kl = 0,
elbo = -recon (Montero et al. 2021 decode the factors of each held-out combination), and
active_units over the factor code; tc, a property of a posterior, is not reported for it.
"""

from __future__ import annotations

import math

import torch

from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl, reconstruction_logits

#: Burda et al.'s threshold on the variance of a dimension's posterior mean.
ACTIVE_UNIT_THRESHOLD = 0.01
#: The keys `unsupervised` returns (reported as eval/*): what a spec may name (search.metric).
UNSUPERVISED_OUTPUTS = ("elbo", "recon", "kl", "tc", "active_units")
#: The keys `decoder_scores` returns, for a model whose code is the ground truth.
DECODER_OUTPUTS = ("elbo", "recon", "kl", "active_units")


@torch.no_grad()
def unsupervised(
    model: VAE, images: torch.Tensor, batch_size: int = 256, seed: int = 0
) -> dict[str, float]:
    """ELBO, its two terms, total correlation and active units on ``images``.

    Args:
        model: a VAE with ``encode(x) -> (mu, logvar)`` and ``decode(z) -> logits``.
        images: (N, C, H, W) held-out images in [0, 1].
        batch_size: images per forward pass.
        seed: seeds the posterior samples.

    Returns:
        ``{"elbo", "recon", "kl", "tc", "active_units"}``, per image where it applies.
    """
    generator = torch.Generator(device=images.device).manual_seed(seed)
    recon_sum = kl_sum = 0.0
    mus, logvars, samples = [], [], []
    for start in range(0, images.shape[0], batch_size):
        x = images[start : start + batch_size]
        mu, logvar = model.encode(x)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        z = mu + eps * (0.5 * logvar).exp()
        logits = reconstruction_logits(model, z, x)  # a discrete code, if any, per image
        recon_sum += float(bernoulli_nll(logits, x).sum())
        kl_sum += float(gaussian_kl(mu, logvar).sum())
        mus.append(mu.double())
        logvars.append(logvar.double())
        samples.append(z.double())
    n = images.shape[0]
    recon, kl = recon_sum / n, kl_sum / n
    mu_all, logvar_all = torch.cat(mus), torch.cat(logvars)
    return {
        "elbo": -(recon + kl),
        "recon": recon,
        "kl": kl,
        "tc": total_correlation(torch.cat(samples), mu_all, logvar_all),
        "active_units": float(active_units(mu_all)),
    }


def total_correlation(
    z: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, chunk: int = 256
) -> float:
    """Full-sample estimate of TC(q(z)) in nats (see module doc).

    Args:
        z: (N, D) one posterior sample per image.
        mu, logvar: (N, D) posterior parameters of the same images.
        chunk: samples scored at a time (memory ~ chunk x N x D doubles).

    Returns:
        The estimate; can be slightly negative for nearly independent codes at small N.
    """
    n = z.shape[0]
    if n < 2:
        return 0.0
    log_n = math.log(n)
    inv_var = torch.exp(-logvar)
    total = 0.0
    for start in range(0, n, chunk):
        zi = z[start : start + chunk, None, :]
        # log q(z_ij | x_n) for every sample i of the chunk, image n and dimension j.
        log_q = -0.5 * ((zi - mu) ** 2 * inv_var + logvar + math.log(2 * math.pi))
        log_joint = torch.logsumexp(log_q.sum(dim=2), dim=1) - log_n
        log_marginals = (torch.logsumexp(log_q, dim=1) - log_n).sum(dim=1)
        total += float((log_joint - log_marginals).sum())
    return total / n


def active_units(mu: torch.Tensor, threshold: float = ACTIVE_UNIT_THRESHOLD) -> int:
    """Number of dimensions with Var over images of the posterior mean above ``threshold``."""
    if mu.shape[0] == 0:
        return 0
    return int((mu.var(dim=0, unbiased=False) > threshold).sum())


@torch.no_grad()
def decoder_scores(
    model: VAE, images: torch.Tensor, codes: torch.Tensor, batch_size: int = 256
) -> dict[str, float]:
    """recon = mean_i -log p(x_i | c_i) for a decoder fed the codes ``codes`` directly (the
    normalised true factors of ``images`` for gt_decoder), kl = 0, elbo = -recon, and the
    active units of the code: the keys of :data:`DECODER_OUTPUTS`.

    Args:
        model: a VAE whose ``decode(c) -> logits``; its encoder is not used.
        images: (N, C, H, W) images in [0, 1].
        codes: (N, D) the code of each image.
    """
    if codes.shape[0] != images.shape[0]:
        raise ValueError(f"{codes.shape[0]} codes for {images.shape[0]} images")
    recon_sum = 0.0
    for start in range(0, images.shape[0], batch_size):
        x = images[start : start + batch_size]
        c = codes[start : start + batch_size].to(device=x.device, dtype=x.dtype)
        recon_sum += float(bernoulli_nll(model.decode(c), x).sum())
    recon = recon_sum / max(images.shape[0], 1)
    return {
        "elbo": -recon,
        "recon": recon,
        "kl": 0.0,
        "active_units": float(active_units(codes.double())),
    }
