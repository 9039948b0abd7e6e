"""A results table with a known answer: what the analysis must find, for tests and benchmarks.

Each trial has a latent quality u ~ N(0, 1); the planted disentanglement score is Phi(u) and
each transfer error a monotone function of -(c u + noise), noise ~ N(0, 1). Spearman's rho is
unchanged by monotone maps of either variable, so the population rank correlation is that of
a bivariate normal with Pearson r = -c / sqrt(c^2 + 1): rho_S = (6 / pi) arcsin(r / 2)
(Kendall & Gibbons, "Rank Correlation Methods", 1990). In the scenario `exact` the error is a
noise-free function of the planted score, so selecting by that score has zero regret. The
`null` score is independent of everything: its rank correlations are 0.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy.special import expit, ndtr

from raystudy.analysis.core.columns import ERROR, RUN_NAME, metric
from raystudy.keys import TRANSFER, eval_key, metric_key, transfer_key
from raystudy.tags import RUN_FAILED, RUN_FINISHED, RUN_RUNNING

PLANTED = metric_key("dis", "dci_d")
NULL = metric_key("dis", "sap")
#: scenario -> strength c of the planted relation (None: noise-free).
SCENARIOS: dict[str, float | None] = {"ood1_a": 1.0, "ood1_b": 2.0, "ood2_a": 0.5, "exact": None}
PROBES = ("gbt", "mlp")
FACTORS = ("shape", "scale", "orientation", "pos_x", "pos_y")
OBJECTIVES = ("beta_vae", "factor_vae", "beta_tcvae", "ada_gvae", "ml_vae", "gt_decoder")
READS_BETA = frozenset({"beta_vae", "beta_tcvae", "ada_gvae", "ml_vae"})


def planted_rho(strength: float | None) -> float:
    """Population Spearman rho between the planted score and a transfer error."""
    if strength is None:
        return -1.0
    r = -strength / math.sqrt(strength**2 + 1.0)
    return 6.0 / math.pi * math.asin(r / 2.0)


def planted_results(
    n: int = 300, *, seed: int = 0, failed: int = 0, running: int = 0
) -> pd.DataFrame:
    """A results table shaped like `load_results` output: n finished trials, then `failed`
    ones (their metrics partly missing) and `running` ones (no final metrics yet)."""
    rng = np.random.default_rng(seed)
    total = n + failed + running
    u = rng.normal(size=total)
    dis = {
        PLANTED: ndtr(u),
        metric_key("dis", "dci_c"): ndtr(0.8 * u + 0.6 * rng.normal(size=total)),
        metric_key("dis", "dci_i"): ndtr(0.5 * u + rng.normal(size=total)),
        metric_key("dis", "mig"): 0.6 * ndtr(0.7 * u + 0.7 * rng.normal(size=total)),
        metric_key("dis", "modularity"): ndtr(0.3 * u + rng.normal(size=total)),
        metric_key("dis", "explicitness"): ndtr(0.4 * u + rng.normal(size=total)),
        metric_key("dis", "beta_vae"): 0.5 + 0.5 * ndtr(0.6 * u + rng.normal(size=total)),
        metric_key("dis", "factor_vae"): 0.3 + 0.7 * ndtr(0.6 * u + rng.normal(size=total)),
        NULL: rng.uniform(size=total),
    }
    recon = 8000.0 + 40.0 * rng.normal(size=total) - 10.0 * u
    kl = 20.0 + 3.0 * rng.normal(size=total)
    metrics: dict[str, np.ndarray] = {metric(k): v for k, v in dis.items()}
    metrics |= {
        metric(eval_key("recon")): recon,
        metric(eval_key("kl")): kl,
        metric(eval_key("elbo")): -(recon + kl),
        metric(metric_key("down", "gbt10000_acc")): ndtr(0.5 * u + rng.normal(size=total)),
    }
    for scenario, strength in SCENARIOS.items():
        for probe in PROBES:
            latent = -u if strength is None else -(strength * u + rng.normal(size=total))
            mae = 0.1 + 0.3 * expit(latent)
            metrics[metric(transfer_key(scenario, probe, "mae"))] = mae
            metrics[metric(transfer_key(scenario, probe, "r2"))] = 1.0 - 8.0 * mae**2
            for i, factor in enumerate(FACTORS):
                scale = 0.6 + 0.2 * i
                per_factor = mae * scale + 0.01 * rng.normal(size=total)
                metrics[metric(transfer_key(scenario, probe, "mae", factor))] = per_factor
    frame = pd.DataFrame(metrics)
    status = np.array([RUN_FINISHED] * n + [RUN_FAILED] * failed + [RUN_RUNNING] * running)
    # A failed trial logged only what it measured before failing; a running one nothing final.
    transfer = [c for c in frame.columns if c.startswith(metric(TRANSFER))]
    frame.loc[status == RUN_FAILED, transfer] = np.nan
    frame.loc[status == RUN_RUNNING, :] = np.nan
    objective = np.array(OBJECTIVES)[np.arange(total) % len(OBJECTIVES)]
    # As trials log them: a model has only the hyperparameters its objective reads.
    beta = np.array(["1.0", "2.0", "4.0", "8.0"])[rng.integers(0, 4, total)].astype(object)
    beta[~np.isin(objective, list(READS_BETA))] = None
    gamma = np.array(["10.0", "50.0"])[rng.integers(0, 2, total)].astype(object)
    gamma[objective != "factor_vae"] = None
    params = {
        "params.model.objective": objective,
        "params.model.beta": beta,
        "params.model.gamma": gamma,
        "params.train.input_noise": np.where(np.arange(total) % 2 == 0, "False", "True"),
        "params.split": "dittadi_hues",
        "params.seed": (np.arange(total) // len(OBJECTIVES) % 3).astype(str),
    }
    names = [f"{i:04d}_{o}" for i, o in enumerate(objective)]
    head = pd.DataFrame(
        {"run_id": [f"run{i:05d}" for i in range(total)], "status": status, **params}
    )
    tags = pd.DataFrame(
        {
            RUN_NAME: names,
            ERROR: np.where(status == RUN_FAILED, "RuntimeError: planted", None),
        }
    )
    return pd.concat([head, frame, tags], axis=1)


#: Scenarios of `planted_effects`: Dittadi et al.'s OOD1 and OOD2 kinds (ood2_b: real images).
EFFECT_SCENARIOS = ("ood1_a", "ood2_a", "ood2_b")


def planted_effects(
    n_per_group: int = 40,
    *,
    weak_effect: float = 0.3,
    noise_effect: float = 0.1,
    seed: int = 0,
) -> pd.DataFrame:
    """A finished results table whose Findings are known: `n_per_group` unsupervised
    (beta_vae) and as many weakly supervised (ada_gvae) trials, half of each with input noise.

    `dis/dci_d` is uniform on [0, 0.6] plus `weak_effect` for weak trials, so the population
    difference of mean DCI-D (weak - unsupervised) is `weak_effect`. Every transfer error falls
    with DCI-D (MAE = 0.3 - 0.2 DCI-D + N(0, 0.02^2)); the OOD2 ones (`ood2_a`, `ood2_b`) are
    `noise_effect` lower with input noise. The reconstruction NLL falls with DCI-D, so the ELBO
    rises with it."""
    rng = np.random.default_rng(seed)
    total = 2 * n_per_group
    weak = np.arange(total) >= n_per_group
    noise = np.arange(total) % 2 == 1
    dci = rng.uniform(0.0, 0.6, size=total) + weak_effect * weak
    recon = 100.0 - 50.0 * dci + 2.0 * rng.normal(size=total)
    frame = pd.DataFrame(
        {
            "status": RUN_FINISHED,
            RUN_NAME: [f"{i:04d}" for i in range(total)],
            "params.model.objective": np.where(weak, "ada_gvae", "beta_vae"),
            "params.train.input_noise": np.where(noise, "True", "False"),
            "params.split": "dittadi_hues",
            metric(metric_key("dis", "dci_d")): dci,
            metric(metric_key("dis", "mig")): 0.5 * dci + 0.05 * rng.normal(size=total),
            metric(eval_key("recon")): recon,
            metric(eval_key("elbo")): -(recon + 10.0),
        }
    )
    for scenario, probe in itertools.product(EFFECT_SCENARIOS, PROBES):
        mae = 0.3 - 0.2 * dci + 0.02 * rng.normal(size=total)
        if scenario.startswith("ood2"):
            mae = mae - noise_effect * noise
        frame[metric(transfer_key(scenario, probe, "mae"))] = mae
    return frame


#: Factors of the Schott-style table; `shape` is kept whole, as on dSprites.
SCHOTT_FACTORS = ("shape", "scale", "orientation", "pos_x", "pos_y")
#: Splits whose scenarios include one `single_<factor>` per split factor.
_SINGLE_SPLITS = ("schott_interpolation", "schott_extrapolation")


def schott_results(
    betas: tuple[float, ...] = (1.0, 4.0, 16.0),
    seeds: int = 3,
    splits: tuple[str, ...] = ("schott_random", "schott_extrapolation"),
    datasets: tuple[str, ...] = ("dsprites", "shapes3d"),
    probes: tuple[str, ...] = ("gbt", "mlp"),
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """A finished results table of a Schott et al. (2022) study: one beta_vae run per beta,
    split, dataset and seed, logging `transfer/test/<probe>/r2[/<factor>]` (and
    `single_<factor>` scenarios on interpolation and extrapolation, where that factor's R^2
    drops and the others' stay), DCI scores and reconstruction NLLs. Values are random; tests
    compute what they expect from the table itself."""
    rng = np.random.default_rng(seed)
    rows = []
    grid = itertools.product(enumerate(betas), enumerate(splits), datasets, range(seeds))
    for (b, beta), (s, split), dataset, replicate in grid:
        row: dict[str, object] = {
            "status": RUN_FINISHED,
            RUN_NAME: f"{len(rows):04d}_beta={beta}_{split}_{dataset}_{replicate}",
            "params.model.objective": "beta_vae",
            "params.model.beta": str(beta),
            "params.split": split,
            "params.dataset.name": dataset,
            "params.seed": str(replicate),
            metric(metric_key("dis", "dci_d")): rng.uniform(),
            metric(metric_key("dis", "dci_lasso_d")): rng.uniform(),
            metric(eval_key("recon")): 100.0 + rng.normal(),
            metric(eval_key("recon", heldout=True)): 150.0 + 10.0 * rng.normal(),
        }
        scenarios = ["test"]
        if split in _SINGLE_SPLITS:
            scenarios += [f"single_{f}" for f in SCHOTT_FACTORS[1:]]
        for scenario, probe in itertools.product(scenarios, probes):
            r2 = 0.9 - 0.1 * b - 0.3 * s + 0.05 * rng.normal(size=len(SCHOTT_FACTORS))
            if scenario.startswith("single_"):
                r2[SCHOTT_FACTORS.index(scenario.removeprefix("single_"))] -= 1.0
            row[metric(transfer_key(scenario, probe, "r2"))] = float(r2.mean())
            row |= {
                metric(transfer_key(scenario, probe, "r2", f)): float(v)
                for f, v in zip(SCHOTT_FACTORS, r2, strict=True)
            }
        rows.append(row)
    return pd.DataFrame(rows)
