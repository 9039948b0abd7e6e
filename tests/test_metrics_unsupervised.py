"""eval/* scores: ELBO terms, total correlation and active units, on tiny fixed VAEs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from scipy.stats import norm

from raystudy.metrics.unsupervised import active_units, total_correlation, unsupervised


class FixedPosterior(torch.nn.Module):
    """encode: a fixed linear map of the image to (mu, logvar); decode: zero logits."""

    def __init__(self, weight: torch.Tensor, logvar: float, pixels: int) -> None:
        super().__init__()
        self.weight = weight
        self.logvar = logvar
        self.pixels = pixels

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu = x.flatten(1) @ self.weight
        return mu, torch.full_like(mu, self.logvar)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(z), 1, 1, self.pixels)


def ref_total_correlation(z: np.ndarray, mu: np.ndarray, logvar: np.ndarray) -> float:
    """Chen et al. 2018's estimate over the whole sample, written with scipy densities."""
    n = len(z)
    std = np.exp(0.5 * logvar)
    # log q(z_ij | x_n) for all i, n, j
    log_q = norm.logpdf(z[:, None, :], loc=mu[None, :, :], scale=std[None, :, :])
    log_joint = logsumexp(log_q.sum(axis=2), axis=1) - math.log(n)
    log_marginals = (logsumexp(log_q, axis=1) - math.log(n)).sum(axis=1)
    return float(np.mean(log_joint - log_marginals))


def test_total_correlation_matches_a_direct_computation():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(60, 3))
    mu[:, 1] += 0.8 * mu[:, 0]  # correlated dimensions: TC > 0
    logvar = rng.normal(-1.0, 0.3, size=(60, 3))
    z = mu + np.exp(0.5 * logvar) * rng.normal(size=(60, 3))
    got = total_correlation(torch.tensor(z), torch.tensor(mu), torch.tensor(logvar), chunk=7)
    assert got == pytest.approx(ref_total_correlation(z, mu, logvar), abs=1e-6)


def test_total_correlation_is_higher_for_dependent_codes():
    rng = np.random.default_rng(1)
    n = 400
    base = rng.normal(size=(n, 1))
    independent = rng.normal(size=(n, 2))
    dependent = np.concatenate([base, base + 0.1 * rng.normal(size=(n, 1))], axis=1)
    logvar = torch.full((n, 2), -4.0)

    def tc(mu: np.ndarray) -> float:
        mu_t = torch.tensor(mu)
        return total_correlation(
            mu_t + 0.135 * torch.randn(n, 2, dtype=torch.float64), mu_t, logvar
        )

    torch.manual_seed(0)
    assert tc(dependent) > tc(independent) + 1.0


def test_active_units_counts_dimensions_whose_mean_varies():
    mu = torch.zeros(100, 4)
    mu[:, 0] = torch.linspace(-1, 1, 100)  # variance ~0.34
    mu[:, 1] = 0.05 * torch.linspace(-1, 1, 100)  # variance ~0.00085 < 0.01
    mu[:, 2] = 0.2 * torch.linspace(-1, 1, 100)  # variance ~0.0136 > 0.01
    assert active_units(mu) == 2


def test_unsupervised_reports_every_eval_key_on_the_same_noise():
    torch.manual_seed(0)
    pixels = 6
    model = FixedPosterior(torch.randn(pixels, 3), logvar=-2.0, pixels=pixels)
    images = torch.rand(50, 1, 1, pixels)
    first = unsupervised(model, images, batch_size=16, seed=3)
    assert set(first) == {"elbo", "recon", "kl", "tc", "active_units"}
    assert first == unsupervised(model, images, batch_size=16, seed=3)
    # Zero logits: every pixel costs log 2 nats whatever the image.
    assert first["recon"] == pytest.approx(pixels * math.log(2), rel=1e-6)
    assert first["elbo"] == pytest.approx(-(first["recon"] + first["kl"]))
    assert 0 <= first["active_units"] <= 3
