"""Results tables with known answers for the questions of Montero et al. 2021 and 2022, Schott
et al. 2022 and Locatello et al. 2019 (`raystudy.analysis.findings.table`): what each Findings
row must find, for tests. Each is a table of finished trials shaped like `load_results` output.

Rank correlations are planted as in `planted_tables`: a score that is a monotone
function of a latent u ~ N(0, 1) and another of c u + N(0, 1) have the population Spearman rho
(6 / pi) arcsin(r / 2) with r = c / sqrt(c^2 + 1) (Kendall & Gibbons 1990); differences are
planted as constant offsets between the two values a question compares.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from planted_tables import SCHOTT_FACTORS
from scipy.special import ndtr

from raystudy.analysis.core.columns import RUN_NAME, metric
from raystudy.keys import eval_key, metric_key, transfer_key
from raystudy.tags import RUN_FINISHED

#: End-to-end models of the Montero et al. tables: (objective, beta, gamma).
MONTERO_MODELS = (
    ("beta_vae", "1", None),
    ("beta_vae", "8", None),
    ("beta_vae", "12", None),
    ("factor_vae", None, "20"),
    ("factor_vae", None, "50"),
    ("factor_vae", None, "100"),
)
MONTERO2021_SPLITS = ("montero_element", "montero_range", "montero_extrapolation")
MONTERO2022_KINDS = ("r2e", "r2r", "extrp")
PROBES = ("linear", "mlp")


def spearman_of(r: float) -> float:
    """Population Spearman rho of a bivariate normal with Pearson r."""
    return 6.0 / math.pi * math.asin(r / 2.0)


def _per_split(element: float, range_: float, extrapolation: float) -> dict[str, float]:
    return dict(zip(MONTERO2021_SPLITS, (element, range_, extrapolation), strict=True))


def _head(rows: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame.insert(0, "status", RUN_FINISHED)
    frame.insert(1, RUN_NAME, [f"{i:04d}" for i in range(len(frame))])
    return frame


def montero2021_planted(
    *,
    gaps: dict[str, float] | None = None,
    gt_gaps: dict[str, float] | None = None,
    strength: float = 1.0,
    seeds: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """Montero et al. 2021's reconstruction study on dSprites: the six end-to-end models and
    the ground-truth decoder, each split of `MONTERO2021_SPLITS` x `seeds` seeds.

    An end-to-end trial's held-out NLL is its training NLL + `gaps[split]` - 10 (strength u -
    e), e ~ N(0, 1), its Lasso D Phi(u): the mean held-out minus training NLL of a split is
    `gaps[split]` and rho(D, held-out NLL) within a split is spearman_of(-strength /
    sqrt(strength^2 + 1)) (the training NLL varies by 0.01 only). The ground-truth decoder's
    gap is `gt_gaps[split]` + 5 e; its D is near 1 (its code is the true factors)."""
    gaps = gaps if gaps is not None else _per_split(0.0, 40.0, 400.0)
    gt_gaps = gt_gaps if gt_gaps is not None else _per_split(0.0, 20.0, 200.0)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    models = [*MONTERO_MODELS, ("gt_decoder", None, None)]
    for split, (objective, beta, gamma), replicate in itertools.product(
        MONTERO2021_SPLITS, models, range(seeds)
    ):
        u, e = rng.normal(size=2)
        if objective == "gt_decoder":
            recon = 30.0 + 0.01 * rng.normal()
            heldout = recon + gt_gaps[split] + 5.0 * e
            lasso, gbt = 0.98 + 0.01 * rng.uniform(size=2)
        else:
            recon = 50.0 + 0.01 * rng.normal()
            heldout = recon + gaps[split] - 10.0 * (strength * u - e)
            lasso, gbt = ndtr(u), ndtr(0.8 * u + 0.6 * rng.normal())
        rows.append(
            {
                "params.model.objective": objective,
                "params.model.beta": beta,
                "params.model.gamma": gamma,
                "params.model.architecture": "mlp" if objective == "gt_decoder" else "conv",
                "params.split": split,
                "params.dataset.name": "dsprites",
                "params.seed": str(replicate),
                metric(metric_key("dis", "dci_lasso_d")): float(lasso),
                metric(metric_key("dis", "dci_d")): float(gbt),
                metric(eval_key("recon")): recon,
                metric(eval_key("recon", heldout=True)): heldout,
            }
        )
    return _head(rows)


def composition_planted(
    *, gaps: dict[str, float] | None = None, seeds: int = 5, seed: int = 0
) -> pd.DataFrame:
    """Montero et al. 2021's composition task (Sec. 2.3) on dSprites: `seeds` trials per split,
    the held-out target NLL the training one + `gaps[split]` + 10 e, e ~ N(0, 1)."""
    gaps = gaps if gaps is not None else _per_split(-20.0, 300.0, 3000.0)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for split, replicate in itertools.product(MONTERO2021_SPLITS, range(seeds)):
        train = 40.0 + 2.0 * rng.normal()
        rows.append(
            {
                "params.model.objective": "composition",
                "params.split": split,
                "params.dataset.name": "dsprites",
                "params.seed": str(replicate),
                metric(metric_key("dis", "dci_lasso_d")): float(rng.uniform(0.6, 1.0)),
                metric(eval_key("composition_nll")): train,
                metric(eval_key("composition_nll", heldout=True)): train
                + gaps[split]
                + 10.0 * rng.normal(),
            }
        )
    return _head(rows)


def montero2022_planted(
    *,
    decoder_effects: dict[str, float] | None = None,
    r2_drops: dict[str, float] | None = None,
    datasets: tuple[str, ...] = ("dsprites", "shapes3d"),
    seeds: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """Montero et al. 2022's study: `montero2022_<kind>` splits (`MONTERO2022_KINDS`) x
    `datasets` x the six end-to-end models and the ground-truth decoder x `seeds`, with the
    decoder test and the encoder test.

    The held-out NLL after the decoder test is the one before + `decoder_effects[kind]` + 5 e;
    the encoder test's R^2 (`transfer/test/<probe>/r2`, `PROBES`) is 0.85 + a model's offset -
    `r2_drops[kind]` + 0.05 e (0 drop for r2e), e ~ N(0, 1) each: each model's drop from r2e
    to a kind is `r2_drops[kind]`."""
    decoder_effects = decoder_effects or {}
    r2_drops = r2_drops if r2_drops is not None else {"r2r": 0.3, "extrp": 0.6}
    heldout_gaps = {"r2e": 5.0, "r2r": 50.0, "extrp": 500.0}
    rng = np.random.default_rng(seed)
    models = [*MONTERO_MODELS, ("wae", None, None), ("gt_decoder", None, None)]
    offsets = dict(zip(models, np.linspace(-0.1, 0.1, len(models)), strict=True))
    rows: list[dict[str, object]] = []
    for kind, dataset, model, replicate in itertools.product(
        MONTERO2022_KINDS, datasets, models, range(seeds)
    ):
        objective, beta, gamma = model
        recon = 100.0 + rng.normal()
        heldout = recon + heldout_gaps[kind] + 5.0 * rng.normal()
        row: dict[str, object] = {
            "params.model.objective": objective,
            "params.model.beta": beta,
            "params.model.gamma": gamma,
            "params.split": f"montero2022_{kind}",
            "params.dataset.name": dataset,
            "params.seed": str(replicate),
            metric(eval_key("recon")): recon,
            metric(eval_key("recon", heldout=True)): heldout,
            metric(eval_key("recon_decoder_test")): recon + rng.normal(),
            metric(eval_key("recon_decoder_test", heldout=True)): heldout
            + decoder_effects.get(kind, 0.0)
            + 5.0 * rng.normal(),
        }
        for probe in PROBES:
            r2 = 0.85 + offsets[model] - r2_drops.get(kind, 0.0) + 0.05 * rng.normal()
            row[metric(transfer_key("test", probe, "r2"))] = r2
        rows.append(row)
    return _head(rows)


#: Models of the Schott et al. table: (objective, beta, architecture) and supervision kind.
SCHOTT_MODELS = (
    ("beta_vae", "1", "conv"),
    ("beta_vae", "8", "conv"),
    ("beta_tcvae", "6", "conv"),
    ("ada_gvae", "1", "conv"),
    ("supervised", None, "conv"),
    ("supervised", None, "mlp"),
)
SCHOTT_KINDS = ("random", "composition", "interpolation", "extrapolation")
_GROUP = {"ada_gvae": "weak", "supervised": "supervised"}


def schott_planted(
    *,
    drops: dict[str, float] | None = None,
    closure: dict[str, float] | None = None,
    modularity_gap: float = 0.6,
    datasets: tuple[str, ...] = ("dsprites", "shapes3d"),
    probes: tuple[str, ...] = ("gbt", "mlp"),
    seeds: int = 3,
    noise: float = 0.03,
    seed: int = 0,
) -> pd.DataFrame:
    """Schott et al. 2022's study: `SCHOTT_MODELS` (unsupervised beta-VAEs and beta-TCVAE,
    weakly supervised Ada-GVAE, supervised conv and MLP) x `schott_<kind>` splits x `datasets`
    x `seeds`, readouts `probes`.

    Each factor's R^2 on a split's test set is a model, dataset and readout level minus
    drops[kind] x (1 - closure[group]) (group 'weak' or 'supervised'; unsupervised models close
    nothing) + noise x e; `r2` is the mean over factors. So R^2(random) - R^2(kind) of a model is
    its drop, and drop(unsupervised) - drop(group) = drops[kind] x closure[group]. On
    interpolation and extrapolation each `single_<factor>` scenario lowers that factor's R^2 by
    `modularity_gap` and leaves the others': the others' mean minus the OOD factor's is
    `modularity_gap`."""
    if drops is None:
        drops = {"composition": 0.3, "interpolation": 0.1, "extrapolation": 0.5}
    closure = closure if closure is not None else {"weak": 0.0, "supervised": 0.5}
    rng = np.random.default_rng(seed)
    levels = {
        (m, d, p): 0.8 + 0.1 * rng.uniform()
        for m, d, p in itertools.product(SCHOTT_MODELS, datasets, probes)
    }
    rows: list[dict[str, object]] = []
    for model, kind, dataset, replicate in itertools.product(
        SCHOTT_MODELS, SCHOTT_KINDS, datasets, range(seeds)
    ):
        objective, beta, architecture = model
        shrink = 1.0 - closure.get(_GROUP.get(objective, ""), 0.0)
        row: dict[str, object] = {
            "params.model.objective": objective,
            "params.model.beta": beta,
            "params.model.architecture": architecture,
            "params.split": f"schott_{kind}",
            "params.dataset.name": dataset,
            "params.seed": str(replicate),
        }
        scenarios = ["test"]
        if kind in ("interpolation", "extrapolation"):
            scenarios += [f"single_{f}" for f in SCHOTT_FACTORS[1:]]
        for probe, scenario in itertools.product(probes, scenarios):
            mean = levels[(model, dataset, probe)] - drops.get(kind, 0.0) * shrink
            r2 = mean + noise * rng.normal(size=len(SCHOTT_FACTORS))
            ood = scenario.removeprefix("single_") if scenario != "test" else None
            if ood is not None:
                r2[SCHOTT_FACTORS.index(ood)] -= modularity_gap
            scored = [v for f, v in zip(SCHOTT_FACTORS, r2, strict=True) if f != ood]
            row[metric(transfer_key(scenario, probe, "r2"))] = float(np.mean(scored))
            row |= {
                metric(transfer_key(scenario, probe, "r2", f)): float(v)
                for f, v in zip(SCHOTT_FACTORS, r2, strict=True)
            }
        rows.append(row)
    return _head(rows)


#: Locatello et al.'s objectives, the hyperparameter each reads, and its values.
LOCATELLO_OBJECTIVES = {
    "beta_vae": ("params.model.beta", ("1", "2", "4", "8")),
    "factor_vae": ("params.model.gamma", ("10", "20", "40", "80")),
    "beta_tcvae": ("params.model.beta", ("1", "2", "4", "8")),
}
#: metric -> (loading on the latent quality u, noise sd).
LOCATELLO_METRICS = {
    metric_key("dis", "beta_vae"): (1.0, 0.5),
    metric_key("dis", "factor_vae"): (1.0, 1.0),
    metric_key("dis", "mig"): (1.0, 0.0),
    metric_key("dis", "dci_d"): (0.7, 0.7),
    metric_key("dis", "modularity"): (0.0, 1.0),
}


def locatello_planted(
    *,
    objective_effects: dict[str, float] | None = None,
    hyper_effects: tuple[float, ...] = (0.0, 0.3, 0.6, 0.9),
    seed_sd: float = 1.0,
    metrics: dict[str, tuple[float, float]] | None = None,
    seeds: int = 20,
    seed: int = 0,
) -> pd.DataFrame:
    """Locatello et al. 2019's study on dSprites: `LOCATELLO_OBJECTIVES` x their four
    hyperparameter values x `seeds`. A trial's quality is u = objective_effects[objective] +
    hyper_effects[value index] + seed_sd e, e ~ N(0, 1); each metric m is loading u + noise e_m
    (`metrics`). See `locatello_shares` and `locatello_rho` for the planted answers."""
    effects = objective_effects if objective_effects is not None else {}
    metrics = metrics if metrics is not None else LOCATELLO_METRICS
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for (objective, (param, values)), h, replicate in itertools.product(
        LOCATELLO_OBJECTIVES.items(), range(len(hyper_effects)), range(seeds)
    ):
        u = effects.get(objective, 0.0) + hyper_effects[h] + seed_sd * rng.normal()
        row: dict[str, object] = {
            "params.model.objective": objective,
            "params.model.beta": None,
            "params.model.gamma": None,
            "params.dataset.name": "dsprites",
            "params.seed": str(replicate),
        }
        row[param] = values[h]
        for name, (loading, sd) in metrics.items():
            row[metric(name)] = loading * u + sd * rng.normal()
        rows.append(row)
    return _head(rows)


def locatello_shares(
    objective_effects: dict[str, float],
    hyper_effects: tuple[float, ...] = (0.0, 0.3, 0.6, 0.9),
    seed_sd: float = 1.0,
    loading: float = 1.0,
    noise: float = 0.0,
) -> tuple[float, float, float]:
    """The population (objective, hyperparameter, seed) shares of a metric's variance in
    `locatello_planted`: the variances (ddof 0) of the balanced design's objective and
    hyperparameter effects and the seed's, each times loading^2, the noise's in the seed's."""
    effects = [objective_effects.get(o, 0.0) for o in LOCATELLO_OBJECTIVES]
    parts = (
        loading**2 * float(np.var(effects)),
        loading**2 * float(np.var(hyper_effects)),
        loading**2 * seed_sd**2 + noise**2,
    )
    total = sum(parts)
    return parts[0] / total, parts[1] / total, parts[2] / total


def locatello_rho(a: str, b: str, metrics: dict[str, tuple[float, float]] | None = None) -> float:
    """Population Spearman rho of metrics a and b of `locatello_planted` with no objective or
    hyperparameter effect and seed_sd 1 (u ~ N(0, 1)): Pearson r = l_a l_b / sqrt((l_a^2 +
    s_a^2)(l_b^2 + s_b^2)) of the two normals."""
    metrics = metrics if metrics is not None else LOCATELLO_METRICS
    (la, sa), (lb, sb) = metrics[a], metrics[b]
    return spearman_of(la * lb / math.sqrt((la**2 + sa**2) * (lb**2 + sb**2)))
