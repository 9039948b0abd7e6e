"""Unsupervised scores of a trained VAE on held-out images: `eval/elbo`, `eval/recon`, `eval/kl`.

ELBO(x) = E_q(z|x)[log p(x|z)] - KL(q(z|x) || p(z)) (Kingma & Welling 2014), estimated with
one posterior sample per image, in nats per image; recon is the negative log-likelihood term
(Bernoulli, summed over pixels) and kl the KL term. Held-out images are fresh renders never
used for training. A fixed generator seeds the posterior samples, so two models are scored on
the same noise.
"""

from __future__ import annotations

import torch

from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


@torch.no_grad()
def unsupervised(
    model: VAE, images: torch.Tensor, batch_size: int = 256, seed: int = 0
) -> dict[str, float]:
    generator = torch.Generator(device=images.device).manual_seed(seed)
    recon_sum = kl_sum = 0.0
    for start in range(0, images.shape[0], batch_size):
        x = images[start : start + batch_size]
        mu, logvar = model.encode(x)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        logits = model.decode(mu + eps * (0.5 * logvar).exp())
        recon_sum += float(bernoulli_nll(logits, x).sum())
        kl_sum += float(gaussian_kl(mu, logvar).sum())
    n = images.shape[0]
    recon, kl = recon_sum / n, kl_sum / n
    return {"elbo": -(recon + kl), "recon": recon, "kl": kl}
