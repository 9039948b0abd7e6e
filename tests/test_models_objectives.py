"""Each objective's loss against a direct computation written out here, on a small batch.

The model is a tiny linear VAE whose posterior sample uses noise fixed by the test, so every
term can be recomputed in float64 numpy from the model's own means and variances.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.linalg
import torch
from torch import nn
from torch.nn import functional as F

from raystudy.metrics.unsupervised import unsupervised
from raystudy.models import Batch, build, get_objective
from raystudy.models.objectives.ada_gvae import adaptive_average
from raystudy.models.objectives.annealed_vae import capacity
from raystudy.models.objectives.beta_tcvae import total_correlation
from raystudy.models.objectives.cascade_vae import CategoryCode, category_head, released_dimensions
from raystudy.models.objectives.category_matching import balanced_categories, matching_cost
from raystudy.models.objectives.factor_vae import permute_dims
from raystudy.models.objectives.lie_group_vae import (
    GroupPosterior,
    LieGroupExp,
    basis_penalties,
    decodes_encoder_features,
    group_encoder,
    lie_layer,
)
from raystudy.models.objectives.ml_vae import poe_aggregate
from raystudy.models.objectives.wae import mmd_imq
from raystudy.models.objectives.weak import pair_divergence, shared_dimensions
from raystudy.models.vae import (
    VAE,
    HeadedEncoder,
    NoImageEncoder,
    noise_tape,
    reconstruction_logits,
)
from raystudy.spec import ModelConfig

D = 3  # latent dimensions
K = 4  # factors
PIX = 16  # a 1x4x4 image


# One torch thread (conftest.py): small batches on shared cores.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class TinyEncoder(nn.Module):
    def __init__(self, latent_dim: int) -> None:
        super().__init__()
        self.latent_dim = latent_dim
        self.net = nn.Linear(PIX, 2 * latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x.flatten(1))
        return h[:, : self.latent_dim], 0.5 * h[:, self.latent_dim :]


class FixedNoiseVAE(VAE):
    """z = mu + eps * sd with eps set by the test (rows used in order)."""

    def __init__(self, latent_dim: int = D, code_is_ground_truth: bool = False) -> None:
        decoder = nn.Sequential(nn.Linear(latent_dim, PIX), nn.Unflatten(1, (1, 4, 4)))
        super().__init__(TinyEncoder(latent_dim), decoder, latent_dim, code_is_ground_truth)
        self.eps = torch.zeros(0, latent_dim)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + self.eps[: mu.shape[0]] * (0.5 * logvar).exp()


def setup(seed: int = 0, n: int = 6, latent_dim: int = D) -> tuple[FixedNoiseVAE, Batch]:
    torch.manual_seed(seed)
    model = FixedNoiseVAE(latent_dim)
    model.eps = torch.randn(2 * n, latent_dim)
    x1 = (torch.rand(n, 1, 4, 4) > 0.5).float()
    x2 = (torch.rand(n, 1, 4, 4) > 0.5).float()
    f1, f2 = torch.rand(n, K), torch.rand(n, K)
    return model, Batch(x1, x1, x2, x2, f1, f2)


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


def np_recon(logits: np.ndarray, x: np.ndarray) -> float:
    """Mean over images of -sum_pixels [x log s + (1 - x) log(1 - s)], s = sigmoid(logits)."""
    s = 1.0 / (1.0 + np.exp(-logits))
    per_image = -(x * np.log(s) + (1 - x) * np.log(1 - s)).reshape(len(x), -1).sum(axis=1)
    return float(per_image.mean())


def np_kl(mu: np.ndarray, logvar: np.ndarray) -> float:
    """Mean over images of sum_d KL(N(mu_d, var_d) || N(0, 1))."""
    return float((0.5 * (mu**2 + np.exp(logvar) - logvar - 1)).sum(axis=1).mean())


def posterior(model: FixedNoiseVAE, x: torch.Tensor) -> tuple[np.ndarray, ...]:
    """(mu, logvar, z, decoder logits at z) in float64."""
    mu, logvar = (np_(t) for t in model.encode(x))
    z = mu + np_(model.eps[: len(mu)]) * np.exp(0.5 * logvar)
    logits = np_(model.decode(torch.from_numpy(z).float()))
    return mu, logvar, z, logits


def close(a: torch.Tensor | float, b: torch.Tensor | float, rel: float = 1e-5) -> bool:
    a, b = (float(v.detach()) if isinstance(v, torch.Tensor) else v for v in (a, b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-5)


# -- beta-VAE, AnnealedVAE ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "beta"), [("vae", 1.0), ("beta_vae", 4.0)])
def test_beta_vae_loss(name: str, beta: float) -> None:
    model, batch = setup()
    mu, logvar, _, logits = posterior(model, batch.inputs)
    recon, kl = np_recon(logits, np_(batch.targets)), np_kl(mu, logvar)
    obj = get_objective(name, beta=beta) if name == "beta_vae" else get_objective(name)
    terms = obj(model, batch)
    assert close(terms.recon, recon) and close(terms.kl, kl)
    assert close(terms.loss, recon + beta * kl)
    assert close(obj(model, batch, kl_weight=0.25).loss, recon + 0.25 * beta * kl)


def test_annealed_capacity_grows_linearly_then_stays() -> None:
    assert [capacity(t, 20.0, 100) for t in (0, 50, 100, 250)] == [0.0, 10.0, 20.0, 20.0]
    model, batch = setup()
    mu, logvar, _, logits = posterior(model, batch.inputs)
    recon, kl = np_recon(logits, np_(batch.targets)), np_kl(mu, logvar)
    obj = get_objective("annealed_vae", gamma=1000.0, c_max=20.0, iteration_threshold=100)
    for step, c in [(0, 0.0), (30, 6.0), (400, 20.0)]:
        terms = obj(model, batch, step=step)
        assert close(terms.extras["capacity"], c)
        assert close(terms.loss, recon + 1000.0 * abs(kl - c))
    assert close(obj(model, batch, step=30, kl_weight=0.5).loss, recon + 500.0 * abs(kl - 6.0))


# -- DIP-VAE --------------------------------------------------------------------------------


def np_dip(cov: np.ndarray, lambda_od: float, lambda_d: float) -> float:
    total = 0.0
    for i in range(cov.shape[0]):
        for j in range(cov.shape[1]):
            if i == j:
                total += lambda_d * (cov[i, i] - 1.0) ** 2
            else:
                total += lambda_od * cov[i, j] ** 2
    return total


@pytest.mark.parametrize(("name", "factor"), [("dip_vae_i", 10.0), ("dip_vae_ii", 1.0)])
def test_dip_covariance_penalties(name: str, factor: float) -> None:
    model, batch = setup(n=8)
    mu, logvar, _, logits = posterior(model, batch.inputs)
    recon, kl = np_recon(logits, np_(batch.targets)), np_kl(mu, logvar)
    cov = np.cov(mu.T, bias=True)  # the covariance of the means, 1/B normalisation
    if name == "dip_vae_ii":
        cov = cov + np.diag(np.exp(logvar).mean(axis=0))  # + E[Cov_q(z|x)]
    penalty = np_dip(cov, 5.0, factor * 5.0)
    terms = get_objective(name, lambda_od=5.0)(model, batch)
    assert close(terms.extras["dip"], penalty, rel=1e-4)
    assert close(terms.loss, recon + kl + penalty, rel=1e-4)


# -- beta-TCVAE -----------------------------------------------------------------------------


def np_normal_pdf(z: float, mu: float, logvar: float) -> float:
    var = math.exp(logvar)
    return math.exp(-((z - mu) ** 2) / (2 * var)) / math.sqrt(2 * math.pi * var)


def np_tc(z: np.ndarray, mu: np.ndarray, logvar: np.ndarray) -> float:
    """mean_i [log q(z_i) - sum_d log q(z_id)], q = the batch's mixture of posteriors."""
    b, d = z.shape
    total = 0.0
    for i in range(b):
        joint = sum(
            math.prod(np_normal_pdf(z[i, k], mu[j, k], logvar[j, k]) for k in range(d))
            for j in range(b)
        )
        marginals = [
            sum(np_normal_pdf(z[i, k], mu[j, k], logvar[j, k]) for j in range(b)) / b
            for k in range(d)
        ]
        total += math.log(joint / b) - sum(math.log(m) for m in marginals)
    return total / b


def test_tc_estimate_and_beta_tcvae_loss() -> None:
    model, batch = setup(n=7)
    mu, logvar, z, logits = posterior(model, batch.inputs)
    tc = np_tc(z, mu, logvar)
    got = total_correlation(*(torch.from_numpy(a) for a in (z, mu, logvar)))
    assert close(got, tc, rel=1e-9)
    recon, kl = np_recon(logits, np_(batch.targets)), np_kl(mu, logvar)
    terms = get_objective("beta_tcvae", beta=6.0)(model, batch)
    assert close(terms.extras["tc"], tc, rel=1e-4)
    assert close(terms.loss, recon + kl + 5.0 * tc, rel=1e-4)
    # Codes copied across dimensions are dependent: a large TC; independent ones near 0 (the
    # minibatch estimate is biased upwards, less so for broader posteriors).
    g = torch.Generator().manual_seed(0)
    u = torch.randn(200, 1, generator=g)
    narrow = torch.full((200, 2), -3.0)
    dependent = total_correlation(u.repeat(1, 2), u.repeat(1, 2), narrow)
    v = torch.randn(200, 2, generator=g)
    independent = total_correlation(v, v, narrow)
    assert dependent > 1.2 and abs(float(independent)) < 0.3


# -- FactorVAE ------------------------------------------------------------------------------


def test_permute_dims_shuffles_each_dimension_on_its_own() -> None:
    torch.manual_seed(0)
    u = torch.randn(500, 1)
    z = torch.cat([u, u, -u], dim=1)
    p = permute_dims(z)
    for k in range(3):  # each column keeps its values...
        assert torch.equal(p[:, k].sort().values, z[:, k].sort().values)
    corr = torch.corrcoef(p.T)  # ...but the columns no longer move together
    assert corr[0, 1].abs() < 0.2 and corr[0, 2].abs() < 0.2


def test_factor_vae_loss_and_discriminator_loss() -> None:
    model, batch = setup(n=8)
    mu, logvar, z, logits = posterior(model, batch.inputs)
    recon, kl = np_recon(logits, np_(batch.targets)), np_kl(mu, logvar)
    obj = get_objective("factor_vae", gamma=30.0)
    obj.setup(model, torch.device("cpu"))
    torch.manual_seed(5)
    terms = obj(model, batch)
    assert obj.discriminator is not None
    zt = torch.from_numpy(z).float()
    with torch.no_grad():
        real = obj.discriminator(zt)
        torch.manual_seed(5)  # the permutation is the only draw in the call
        fake = obj.discriminator(permute_dims(zt))
    tc = float((real[:, 0] - real[:, 1]).mean())
    assert close(terms.extras["tc"], tc, rel=1e-4)
    assert close(terms.loss, recon + kl + 30.0 * tc, rel=1e-4)
    ce = 0.5 * (
        F.cross_entropy(real, torch.zeros(8, dtype=torch.long))
        + F.cross_entropy(fake, torch.ones(8, dtype=torch.long))
    )
    assert terms.aux_loss is not None and close(terms.aux_loss, float(ce), rel=1e-4)


def test_factor_vae_updates_its_discriminator_and_only_it() -> None:
    model, batch = setup(n=8)
    obj = get_objective("factor_vae")
    obj.setup(model, torch.device("cpu"))
    terms = obj(model, batch)
    terms.loss.backward()
    assert obj.discriminator is not None
    # the VAE's loss reaches the encoder through D's input, never D's weights
    assert all(p.grad is None for p in obj.discriminator.parameters())
    assert model.encoder.net.weight.grad is not None
    vae_grads = [p.grad.clone() for p in model.parameters()]
    vae_params = [p.detach().clone() for p in model.parameters()]
    d_before = [p.detach().clone() for p in obj.discriminator.parameters()]
    obj.auxiliary_step(terms)
    assert all(
        not torch.equal(a, b) for a, b in zip(d_before, obj.discriminator.parameters(), strict=True)
    )
    for g, p, p0 in zip(vae_grads, model.parameters(), vae_params, strict=True):
        assert torch.equal(p.grad, g) and torch.equal(p, p0)
    state = obj.state_dict()
    assert set(state) == {"discriminator", "optimizer"} and state["optimizer"]["state"]


def test_factor_vae_discriminator_learns_to_spot_dependent_codes() -> None:
    torch.manual_seed(0)
    model = FixedNoiseVAE()
    with torch.no_grad():  # every code dimension is the same function of the image
        model.encoder.net.weight[:D] = model.encoder.net.weight[0]
        model.encoder.net.bias[:D] = model.encoder.net.bias[0]
        model.encoder.net.bias[D:] = -20.0  # near-deterministic codes
    model.eps = torch.zeros(256, D)
    obj = get_objective("factor_vae")
    obj.setup(model, torch.device("cpu"))
    assert obj.discriminator is not None

    def log_odds() -> tuple[float, float, float]:
        """Mean log-odds of "real" on fresh codes and on permuted ones, and the accuracy."""
        with torch.no_grad():
            z = model.encode(torch.rand(256, 1, 4, 4))[0]
            real, fake = obj.discriminator(z), obj.discriminator(permute_dims(z))
        real_odds, fake_odds = real[:, 0] - real[:, 1], fake[:, 0] - fake[:, 1]
        accuracy = 0.5 * float((real_odds > 0).float().mean() + (fake_odds < 0).float().mean())
        return float(real_odds.mean()), float(fake_odds.mean()), accuracy

    assert log_odds()[2] == 0.5  # untrained: no opinion
    for _ in range(20):
        x = torch.rand(32, 1, 4, 4)
        obj.auxiliary_step(obj(model, Batch(x, x)))
    real_odds, fake_odds, accuracy = log_odds()
    assert real_odds > 0.2 > 0 > fake_odds and accuracy > 0.7


# -- weak supervision -----------------------------------------------------------------------


def normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.distributions.Normal:
    return torch.distributions.Normal(mu, (0.5 * logvar).exp())


def test_pair_divergences() -> None:
    g = torch.Generator().manual_seed(0)
    m1, l1, m2, l2 = (torch.randn(5, 4, generator=g) for _ in range(4))
    forward = torch.distributions.kl_divergence(normal(m1, l1), normal(m2, l2))
    backward = torch.distributions.kl_divergence(normal(m2, l2), normal(m1, l1))
    assert torch.allclose(pair_divergence(m1, l1, m2, l2, "kl"), forward, atol=1e-5)
    sym = pair_divergence(m1, l1, m2, l2, "symmetric_kl")
    assert torch.allclose(sym, 0.5 * (forward + backward), atol=1e-5)
    assert torch.allclose(sym, pair_divergence(m2, l2, m1, l1, "symmetric_kl"))


def test_threshold_is_the_midpoint_of_the_extremes() -> None:
    delta = torch.tensor([[0.1, 5.0, 0.2, 2.5], [0.1, 5.0, 0.2, 2.6], [1.0, 1.0, 1.0, 1.0]])
    assert shared_dimensions(delta).tolist() == [
        [True, False, True, True],  # tau = 2.55
        [True, False, True, False],
        [False, False, False, False],  # nothing stands out: nothing is averaged
    ]


def test_symmetric_threshold_can_decide_differently() -> None:
    # dim 0: same mean, variance 1 vs 0.01: KL(q1||q2) = 47.2 but KL(q2||q1) = 1.8
    # dim 1: means 6 apart, unit variances: 18 both ways; dim 2: identical posteriors
    mu1, mu2 = torch.tensor([[0.0, 0.0, 0.0]]), torch.tensor([[0.0, 6.0, 0.0]])
    lv1, lv2 = torch.zeros(1, 3), torch.tensor([[math.log(0.01), 0.0, 0.0]])
    forward = shared_dimensions(pair_divergence(mu1, lv1, mu2, lv2, "kl"))
    symmetric = shared_dimensions(pair_divergence(mu1, lv1, mu2, lv2, "symmetric_kl"))
    assert forward.tolist() == [[False, True, True]]  # 18 < (47.2 + 0) / 2
    assert symmetric.tolist() == [[False, False, True]]  # 18 > (24.5 + 0) / 2


def test_ada_gvae_averages_only_the_dimensions_that_did_not_change() -> None:
    mu1 = torch.tensor([[0.0, 1.0, -1.0, 0.5]])
    mu2 = mu1.clone()
    mu2[0, 2] = 3.0  # one factor changed -> one latent moved a lot
    mu2[0, 0] = 0.05  # small noise elsewhere
    logvar1 = torch.full_like(mu1, -2.0)
    logvar2 = torch.full_like(mu1, -1.0)
    a_mu, a_lv, b_mu, b_lv = adaptive_average(mu1, logvar1, mu2, logvar2)
    assert a_mu[0, 2] == mu1[0, 2] and b_mu[0, 2] == mu2[0, 2]  # kept apart
    shared = [0, 1, 3]
    assert torch.allclose(a_mu[0, shared], b_mu[0, shared])
    assert torch.isclose(a_mu[0, 0], torch.tensor(0.025))  # mean of the means
    mean_var = 0.5 * (math.exp(-2.0) + math.exp(-1.0))  # mean of the variances
    assert torch.allclose(a_lv[0, shared], torch.tensor(math.log(mean_var)))
    assert a_lv[0, 2] == -2.0 and b_lv[0, 2] == -1.0


def test_ml_vae_product_of_experts() -> None:
    # N(0, 1) and N(3, 2): precision (1 + 1/2) / 2 = 3/4, mean (0 * 1 + 3 * 1/2) / 2 / (3/4) = 1
    mu, logvar = poe_aggregate(
        torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([3.0]), torch.log(torch.tensor(2.0))
    )
    assert torch.isclose(mu, torch.tensor(1.0)) and torch.isclose(logvar.exp(), torch.tensor(4 / 3))
    # In general the aggregate is the normalised (q1 q2)^(1/2): its log-density differs from
    # the mean of the two log-densities by a constant.
    g = torch.Generator().manual_seed(1)
    m1, l1, m2, l2 = (torch.randn(1, generator=g) for _ in range(4))
    m, lv = poe_aggregate(m1, l1, m2, l2)
    grid = torch.linspace(-4, 4, 9, dtype=torch.float64)

    def log_pdf(mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
        return normal(mean.double(), log_var.double()).log_prob(grid)

    gap = log_pdf(m, lv) - 0.5 * (log_pdf(m1, l1) + log_pdf(m2, l2))
    assert float(gap.max() - gap.min()) < 1e-5  # float32 parameters


def np_shared(delta: np.ndarray) -> np.ndarray:
    return delta < (delta.max(axis=1, keepdims=True) + delta.min(axis=1, keepdims=True)) / 2


def np_kl_between(m1: np.ndarray, l1: np.ndarray, m2: np.ndarray, l2: np.ndarray) -> np.ndarray:
    return 0.5 * (l2 - l1 + (np.exp(l1) + (m1 - m2) ** 2) / np.exp(l2) - 1)


@pytest.mark.parametrize("name", ["ada_gvae", "ml_vae"])
@pytest.mark.parametrize("kl_mode", ["kl", "symmetric_kl"])
def test_weak_loss(name: str, kl_mode: str) -> None:
    model, batch = setup(n=6)
    assert batch.inputs2 is not None and batch.targets2 is not None
    mu, lv = (np_(t) for t in model.encode(torch.cat([batch.inputs, batch.inputs2])))
    m1, l1, m2, l2 = mu[:6], lv[:6], mu[6:], lv[6:]
    delta = np_kl_between(m1, l1, m2, l2)
    if kl_mode == "symmetric_kl":
        delta = 0.5 * (delta + np_kl_between(m2, l2, m1, l1))
    shared = np_shared(delta)
    v1, v2 = np.exp(l1), np.exp(l2)
    if name == "ada_gvae":
        agg_mu, agg_var = (m1 + m2) / 2, (v1 + v2) / 2
    else:
        agg_var = 2 / (1 / v1 + 1 / v2)
        agg_mu = agg_var * (m1 / v1 + m2 / v2) / 2
    new_mu = np.concatenate([np.where(shared, agg_mu, m1), np.where(shared, agg_mu, m2)])
    new_lv = np.concatenate(
        [np.where(shared, np.log(agg_var), l1), np.where(shared, np.log(agg_var), l2)]
    )
    z = new_mu + np_(model.eps) * np.exp(0.5 * new_lv)
    logits = np_(model.decode(torch.from_numpy(z).float()))
    targets = np_(torch.cat([batch.targets, batch.targets2]))
    recon, kl = np_recon(logits, targets), np_kl(new_mu, new_lv)
    terms = get_objective(name, beta=3.0, kl_mode=kl_mode)(model, batch)
    assert shared.any() and not shared.all()
    assert close(terms.recon, recon, rel=1e-4) and close(terms.kl, kl, rel=1e-4)
    assert close(terms.loss, recon + 3.0 * kl, rel=1e-4)


def test_weak_objectives_refuse_unpaired_batches() -> None:
    model, batch = setup()
    for name in ("ada_gvae", "ml_vae"):
        with pytest.raises(ValueError, match="pairs"):
            get_objective(name)(model, Batch(batch.inputs, batch.targets))


# -- Montero et al. 2022: WAE, CascadeVAE, LieGroupVAE -----------------------------------


def np_imq(x: np.ndarray, y: np.ndarray) -> float:
    """sum over s in {.1, .2, .5, 1, 2, 5, 10} of C / (C + ||x - y||^2), C = s * 2 * d."""
    c = [s * 2.0 * len(x) for s in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)]
    r = float(((x - y) ** 2).sum())
    return sum(ci / (ci + r) for ci in c)


def test_wae_loss_is_recon_plus_the_unbiased_imq_mmd() -> None:
    model, batch = setup(n=6)
    mu, logvar, z, logits = posterior(model, batch.inputs)
    prior = torch.randn(6, D, generator=torch.Generator().manual_seed(7))
    obj = get_objective("wae", lambda_mmd=7.0, lambda_logvar=0.5)
    with noise_tape([prior]):  # the prior draw is the objective's only draw of its own
        terms = obj(model, batch)
    p, n = np_(prior), 6
    pairs = [(i, j) for i in range(n) for j in range(n)]
    within = sum(np_imq(z[i], z[j]) + np_imq(p[i], p[j]) for i, j in pairs if i != j)
    mmd = within / (n * (n - 1)) - 2.0 * sum(np_imq(z[i], p[j]) for i, j in pairs) / n**2
    l1 = float(np.abs(logvar).sum(axis=1).mean())
    recon = np_recon(logits, np_(batch.targets))
    assert close(terms.extras["mmd"], mmd, rel=1e-4) and close(terms.extras["logvar_l1"], l1)
    assert close(terms.recon, recon) and close(terms.kl, np_kl(mu, logvar))  # kl: reported only
    assert close(terms.loss, recon + 7.0 * mmd + 0.5 * l1, rel=1e-4)
    with noise_tape([prior]):
        assert close(obj(model, batch, kl_weight=0.5).loss, recon + 0.5 * (7 * mmd + 0.5 * l1))


def test_mmd_tells_the_prior_from_a_shifted_code() -> None:
    g = torch.Generator().manual_seed(0)
    prior, same, shifted = (torch.randn(300, 4, generator=g) for _ in range(3))
    # Unbiased: near 0, either sign (|.| < 0.013 over five seeds, against 0.21-0.31 for a
    # shift of 0.5 sd and ~2.6 for 2 sd).
    assert abs(float(mmd_imq(same, prior))) < 0.05
    assert float(mmd_imq(shifted + 0.5, prior)) > 0.1
    assert float(mmd_imq(shifted + 2.0, prior)) > 2.0
    with pytest.raises(ValueError, match="n >= 2"):
        mmd_imq(prior[:1], prior[:1])


def test_cascade_releases_one_dimension_every_n_steps() -> None:
    steps = (0, 9, 10, 25, 30, 1000)
    assert [released_dimensions(t, 3, 10) for t in steps] == [0, 0, 1, 2, 3, 3]
    model, batch = setup()
    mu, logvar, _, logits = posterior(model, batch.inputs)
    recon = np_recon(logits, np_(batch.targets))
    kl_d = (0.5 * (mu**2 + np.exp(logvar) - logvar - 1)).mean(axis=0)
    obj = get_objective("cascade_vae", beta_low=2.0, beta_high=10.0, release_every=10)
    for step, released in [(0, 0), (10, 1), (25, 2), (99, 3)]:
        betas = [2.0] * released + [10.0] * (D - released)
        penalty = sum(b * k for b, k in zip(betas, kl_d, strict=True))
        terms = obj(model, batch, step=step)
        assert float(terms.extras["released"]) == released
        assert close(terms.kl, kl_d.sum()) and close(terms.loss, recon + penalty)
        assert close(obj(model, batch, step=step, kl_weight=0.5).loss, recon + 0.5 * penalty)
    with pytest.raises(ValueError, match="release_every"):
        get_objective("cascade_vae", release_every=0)


def brute_force_categories(unary: np.ndarray, balance: float) -> float:
    """The least matching cost over all K^B assignments."""
    b, k = unary.shape
    return min(
        matching_cost(unary, np.array(c), balance) for c in itertools.product(range(k), repeat=b)
    )


def test_balanced_categories_is_the_exact_minimum() -> None:
    rng = np.random.default_rng(0)
    for balance in (0.0, 0.3, 2.0, 50.0):
        for _ in range(5):
            unary = rng.normal(size=(6, 3)) * 2.0
            chosen = balanced_categories(unary, balance)
            best = brute_force_categories(unary, balance)
            assert math.isclose(matching_cost(unary, chosen, balance), best, abs_tol=1e-9)
            if balance == 0.0:
                assert (chosen == unary.argmin(axis=1)).all()
            if balance == 50.0:  # pairs cost more than any reconstruction gain: 2 per category
                assert sorted(np.bincount(chosen, minlength=3)) == [2, 2, 2]
    with pytest.raises(ValueError, match="balance"):
        balanced_categories(np.zeros((2, 3)), -1.0)


def cascade_model(n_categories: int = 3) -> tuple[FixedNoiseVAE, Batch]:
    """The tiny model with the decoder [z; c] -> pixels behind its CategoryCode head."""
    model, batch = setup(n=6)
    decoder = nn.Sequential(nn.Linear(D + n_categories, PIX), nn.Unflatten(1, (1, 4, 4)))
    with torch.no_grad():  # categories that decode very differently, so the choice matters
        decoder[0].weight[:, D:] = 3.0 * torch.randn(PIX, n_categories)
    model.decoder = nn.Sequential(CategoryCode(D, n_categories), *decoder)
    return model, batch


def test_cascade_discrete_code_is_the_balanced_best_category() -> None:
    model, batch = cascade_model()
    mu, logvar = (np_(t) for t in model.encode(batch.inputs))
    z = mu + np_(model.eps[:6]) * np.exp(0.5 * logvar)
    w, b = np_(model.decoder[1].weight), np_(model.decoder[1].bias)
    targets = np_(batch.targets).reshape(6, -1)

    def recon_with(codes: np.ndarray) -> np.ndarray:  # per image
        logits = np.concatenate([z, codes], axis=1) @ w.T + b
        s = 1.0 / (1.0 + np.exp(-logits))
        return -(targets * np.log(s) + (1 - targets) * np.log(1 - s)).sum(axis=1)

    unary = np.stack([recon_with(np.tile(np.eye(3)[k], (6, 1))) for k in range(3)], axis=1)
    kl_d = (0.5 * (mu**2 + np.exp(logvar) - logvar - 1)).mean(axis=0)
    obj = get_objective(
        "cascade_vae", release_every=10, categories=3, discrete_from=20, category_balance=4.0
    )
    # Before discrete_from: c = 0 for every image, no category counted.
    terms = obj(model, batch, step=19)
    penalty = 2.0 * kl_d[0] + 10.0 * kl_d[1:].sum()
    assert close(terms.loss, recon_with(np.zeros((6, 3))).mean() + penalty, rel=1e-4)
    assert [float(terms.extras[f"category_{k}"]) for k in range(3)] == [0.0, 0.0, 0.0]
    assert float(category_head(model).discrete) == 0.0
    # From discrete_from: the assignment that minimises recon + 4 * sum_k n_k (n_k - 1) / 2.
    best = min(
        itertools.product(range(3), repeat=6),
        key=lambda c: matching_cost(unary, np.array(c), 4.0),
    )
    codes = np.eye(3)[list(best)]
    terms = obj(model, batch, step=25)
    recon = float(recon_with(codes).mean())
    penalty = 2.0 * kl_d[:2].sum() + 10.0 * kl_d[2]
    assert close(terms.recon, recon, rel=1e-4) and close(terms.loss, recon + penalty, rel=1e-4)
    fractions = [float(terms.extras[f"category_{k}"]) for k in range(3)]
    assert np.allclose(fractions, codes.mean(axis=0)) and sum(fractions) == pytest.approx(1.0)
    assert float(category_head(model).discrete) == 1.0  # evaluation now decodes categories
    assert close(obj(model, batch, step=25, kl_weight=0.5).loss, recon + 0.5 * penalty, rel=1e-4)
    terms.loss.backward()  # the chosen code's decode trains the decoder's category weights
    assert model.decoder[1].weight.grad[:, D:].abs().sum() > 0
    unbalanced = get_objective("cascade_vae", categories=3, discrete_from=0, category_balance=0)
    chosen = np.argmin(unary, axis=1)
    assert close(unbalanced(model, batch, step=0).recon, unary.min(axis=1).mean(), rel=1e-4)
    assert len(set(chosen)) > 1  # the test's categories really compete


@torch.no_grad()
def min_category_nll(model: VAE, z: torch.Tensor, x: torch.Tensor) -> float:
    """Mean over images of min_k -log p(x | z, e_k), decoding [z; e_k] directly."""
    per_category = [
        F.binary_cross_entropy_with_logits(
            model.decode(torch.cat([z, torch.eye(3)[k].expand(len(z), 3)], dim=1)),
            x,
            reduction="none",
        )
        .flatten(1)
        .sum(dim=1)
        for k in range(3)
    ]
    return float(torch.stack(per_category, dim=1).min(dim=1).values.mean())


def test_cascade_evaluation_decodes_each_image_with_its_best_category() -> None:
    model, batch = cascade_model()
    z = torch.randn(6, D)
    head = category_head(model)
    zeros = torch.cat([z, torch.zeros(6, 3)], dim=1)
    # Before the discrete phase the model decodes as it trained: with c = 0.
    assert torch.equal(reconstruction_logits(model, z, batch.targets), model.decode(zeros))
    assert torch.equal(model.decode(z), model.decode(zeros))
    head.discrete.fill_(1.0)
    per_category = [
        F.binary_cross_entropy_with_logits(
            model.decode(torch.cat([z, torch.eye(3)[k].expand(6, 3)], dim=1)),
            batch.targets,
            reduction="none",
        )
        .flatten(1)
        .sum(dim=1)
        for k in range(3)
    ]
    best = torch.stack(per_category, dim=1).argmin(dim=1)
    expected = model.decode(torch.cat([z, F.one_hot(best, 3).float()], dim=1))
    assert torch.allclose(reconstruction_logits(model, z, batch.targets), expected)
    # eval/recon reconstructs each held-out image with its best category too.
    images = batch.targets
    mu, logvar = model.encode(images)
    eps = torch.randn(mu.shape, generator=torch.Generator().manual_seed(0))
    sample = mu + eps * (0.5 * logvar).exp()
    best_nll = min_category_nll(model, sample, images)
    assert close(unsupervised(model, images, seed=0)["recon"], best_nll, rel=1e-5)
    # A code alone (traversals) decodes with category 0; [z; c] passes through.
    first = torch.cat([z, torch.eye(3)[0].expand(6, 3)], dim=1)
    assert torch.equal(model.decode(z), model.decode(first))
    with pytest.raises(ValueError, match="reads a code of 3"):
        model.decode(torch.zeros(6, 5))


def test_cascade_builds_its_category_head_unless_categories_is_zero() -> None:
    config = ModelConfig(objective="cascade_vae", architecture="mlp", latent_dim=5)
    model, obj = build(config, 1, 64, num_factors=K)
    head = category_head(model)
    assert head is not None and head.out_features == 8 and obj.unbatchable_from == 80_000
    assert "decoder.0.discrete" in model.state_dict()  # checkpointed with the model
    assert model.decode(torch.zeros(2, 5)).shape == (2, 1, 64, 64)
    plain_config = config.model_copy(update={"categories": 0})
    plain, plain_obj = build(plain_config, 1, 64, num_factors=K)
    assert category_head(plain) is None and plain_obj.unbatchable_from == math.inf
    assert plain.decoder.net[0].in_features == 5
    discrete = get_objective("cascade_vae", discrete_from=0)
    with pytest.raises(ValueError, match="CategoryCode"):
        discrete(plain, Batch(torch.zeros(2, 1, 64, 64), torch.zeros(2, 1, 64, 64)))
    with pytest.raises(ValueError, match="categories"):
        get_objective("cascade_vae", categories=1)


def unit(m: int, i: int, j: int) -> torch.Tensor:
    e = torch.zeros(m, m)
    e[i, j] = 1.0
    return e


def test_basis_penalties_on_hand_made_bases() -> None:
    # E12 E34 = E34 E12 = 0: independent one-parameter subgroups, nothing to penalise.
    hessian, commute = basis_penalties(torch.stack([unit(4, 0, 1), unit(4, 2, 3)]))
    assert float(hessian) == 0.0 and float(commute) == 0.0
    # E12 E21 = E11, E21 E12 = E22: ||.||^2 = 1 each, over D^2 = 4; commutator E11 - E22 twice
    hessian, commute = basis_penalties(torch.stack([unit(2, 0, 1), unit(2, 1, 0)]))
    assert float(hessian) == 0.5 and float(commute) == 1.0
    # Commuting (diagonal) but not annihilating: only the first term.
    hessian, commute = basis_penalties(torch.stack([torch.eye(2), 2.0 * torch.eye(2)]))
    assert float(hessian) == (8.0 + 8.0) / 4 and float(commute) == 0.0  # ||2 I||^2 = 8


def lie_model(m: int = 2) -> tuple[FixedNoiseVAE, Batch]:
    """The tiny model with a group-feature encoder and the exponential map before its decoder."""
    model, batch = setup(n=5)
    model.encoder = HeadedEncoder(TinyEncoder(m * m), GroupPosterior(D, m))
    head = LieGroupExp(D, m)
    with torch.no_grad():
        head.basis.copy_(0.5 * torch.randn(D, m, m))
    model.decoder = nn.Sequential(head, nn.Linear(m * m, PIX), nn.Unflatten(1, (1, 4, 4)))
    return model, batch


def np_mlp(seq: nn.Sequential, h: np.ndarray) -> np.ndarray:
    """Linear, ReLU, Linear in float64."""
    hidden = np.maximum(h @ np_(seq[0].weight).T + np_(seq[0].bias), 0.0)
    return hidden @ np_(seq[2].weight).T + np_(seq[2].bias)


def test_lie_group_vae_loss_by_hand_on_both_decoder_inputs() -> None:
    m = 2
    model, batch = lie_model(m)
    encoder, head = model.encoder, model.decoder[0]
    x = np_(batch.inputs).reshape(5, -1)
    features = (x @ np_(encoder.backbone.net.weight).T + np_(encoder.backbone.net.bias))[:, :4]
    mu, logvar = np_mlp(encoder.head.mean, features), np_mlp(encoder.head.logvar, features)
    z = mu + np_(model.eps[:5]) * np.exp(0.5 * logvar)
    a = np_(head.basis)
    groups = np.stack([scipy.linalg.expm(np.einsum("d,dij->ij", zb, a)) for zb in z])
    groups = groups.reshape(5, -1)
    assert np.allclose(np_(head(torch.from_numpy(z).float())), groups, atol=1e-5)

    def recon_from(g: np.ndarray) -> float:
        return np_recon(np_(model.decoder[1:](torch.from_numpy(g).float())), np_(batch.targets))

    kl = np_kl(mu, logvar)
    group_recon = float(((features - groups) ** 2).sum(axis=1).mean())
    off = [(i, j) for i in range(D) for j in range(D) if i != j]
    hessian = sum(float(((a[i] @ a[j]) ** 2).sum()) for i, j in off) / D**2
    commute = sum(float(((a[i] @ a[j] - a[j] @ a[i]) ** 2).sum()) for i, j in off) / D**2
    penalty = 2.0 * kl + 0.5 * group_recon + 40.0 * hessian + 3.0 * commute
    obj = get_objective(
        "lie_group_vae",
        beta=2.0,
        lambda_hessian=40.0,
        lambda_commute=3.0,
        lambda_group_recon=0.5,
        encoder_features_prob=0.5,
    )
    coins = {t: decodes_encoder_features(t, 0.5) for t in range(20)}
    for step in (min(t for t, c in coins.items() if c), min(t for t, c in coins.items() if not c)):
        recon = recon_from(features if coins[step] else groups)
        terms = obj(model, batch, step=step)
        assert float(terms.extras["encoder_features"]) == float(coins[step])
        assert close(terms.recon, recon, rel=1e-4) and close(terms.kl, kl)
        assert close(terms.extras["group_recon"], group_recon, rel=1e-4)
        assert close(terms.extras["hessian"], hessian) and close(terms.extras["commute"], commute)
        assert close(terms.loss, recon + penalty, rel=1e-4)
        assert close(obj(model, batch, step=step, kl_weight=0.5).loss, recon + 0.5 * penalty)
    model.zero_grad()
    terms.loss.backward()  # the basis and the group head are the model's and learn with it
    assert head.basis.grad is not None and head.basis.grad.abs().sum() > 0
    assert encoder.head.mean[0].weight.grad.abs().sum() > 0


def test_the_decoder_reads_the_encoder_features_on_a_seeded_fifth_of_the_steps() -> None:
    coins = [decodes_encoder_features(t, 0.2) for t in range(5000)]
    assert coins == [decodes_encoder_features(t, 0.2) for t in range(5000)]  # step alone
    assert abs(sum(coins) / 5000 - 0.2) < 0.02
    assert not any(decodes_encoder_features(t, 0.0) for t in range(100))
    assert all(decodes_encoder_features(t, 1.0) for t in range(100))
    with pytest.raises(ValueError, match="encoder_features_prob"):
        get_objective("lie_group_vae", encoder_features_prob=1.5)


def test_lie_group_vae_builds_its_group_encoder_and_exponential_map() -> None:
    config = ModelConfig(objective="lie_group_vae", architecture="mlp", group_matrix_dim=3)
    model, obj = build(config, 1, 64, num_factors=K)
    layer = lie_layer(model)
    assert layer.basis.shape == (10, 3, 3) and layer.out_features == 9
    assert any(p is layer.basis for p in model.parameters())
    assert model.decode(torch.zeros(2, 10)).shape == (2, 1, 64, 64)
    encoder = group_encoder(model)
    x = torch.rand(2, 1, 64, 64)
    assert encoder.features(x).shape == (2, 9)
    assert [t.shape for t in model.encode(x)] == [(2, 10), (2, 10)]
    # The backbone's own log-variance layer is gone: no parameter that never trains.
    assert not any(n.startswith("encoder.backbone.logvar") for n, _ in model.named_parameters())
    assert obj.decoder_head(10) is not None and get_objective("wae").decoder_head(10) is None
    assert obj.encoder_head(10).in_features == 9 and get_objective("wae").encoder_head(10) is None
    plain, _ = build(ModelConfig(objective="vae", architecture="mlp"), 1, 64, num_factors=K)
    with pytest.raises(ValueError, match="GroupPosterior"):
        obj(plain, Batch(torch.zeros(2, 1, 64, 64), torch.zeros(2, 1, 64, 64)))


# -- references -----------------------------------------------------------------------------


def grads(model: nn.Module, loss: torch.Tensor) -> dict[str, torch.Tensor | None]:
    model.zero_grad(set_to_none=True)
    loss.backward(retain_graph=True)
    return {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}


def same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    a = torch.zeros(1) if a is None else a
    b = torch.zeros(1) if b is None else b
    return bool(torch.allclose(a, b, atol=1e-6)) if a.shape == b.shape else not (a.any() or b.any())


def test_gt_decoder_decodes_the_factors_and_has_no_image_encoder() -> None:
    tiny, batch = setup(latent_dim=K)
    model = VAE(NoImageEncoder(), tiny.decoder, K, code_is_ground_truth=True)
    assert batch.factors is not None
    terms = get_objective("gt_decoder")(model, batch)
    logits = np_(model.decode(batch.factors))
    assert close(terms.recon, np_recon(logits, np_(batch.targets)))
    assert close(terms.loss, terms.recon) and float(terms.kl) == 0.0 and not terms.extras
    # Montero et al.'s reference sees factors only: no encoder to train, and none to misuse.
    built, _ = build(ModelConfig(objective="gt_decoder"), 1, 64, num_factors=K)
    assert isinstance(built.encoder, NoImageEncoder)
    assert all(name.startswith("decoder") for name, _ in built.named_parameters())
    with pytest.raises(RuntimeError, match="ground-truth factors"):
        model.encode(batch.inputs)
    with pytest.raises(ValueError, match="factors"):
        get_objective("gt_decoder")(model, Batch(batch.inputs, batch.targets))


def test_supervised_regresses_the_factors_and_decodes_its_detached_code() -> None:
    model, batch = setup(latent_dim=K)
    assert batch.factors is not None
    terms = get_objective("supervised")(model, batch)
    mu, _ = model.encode(batch.inputs)
    assert close(terms.extras["regression"], ((mu - batch.factors) ** 2).sum(1).mean())
    assert close(terms.recon, np_recon(np_(model.decode(mu)), np_(batch.targets)))
    total, recon_only = grads(model, terms.loss), grads(model, terms.recon)
    for name in total:  # the reconstruction never reaches the encoder
        if name.startswith("encoder"):
            assert recon_only[name] is None
        else:
            assert same(total[name], recon_only[name])
