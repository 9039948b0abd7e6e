"""Scoring a trained model: every eval/*, dis/*, down/* and transfer/* key a trial reports
(`raystudy.keys`), on ground-truth draws fixed by `evaluation.seed` alone.

No Ray and no MLflow: `plan`, benchmarks and notebooks score a model with this module alone,
and the trials log what it returns. `score_representation` scores any representation given as
a `Represent` callable (images -> codes), which is how `raystudy.evaluate` scores an encoder
that raystudy did not train on the same draws as the trials' models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.data.splits.composition import HELDOUT_ROLES, TRAIN_ROLES, sample_triples
from raystudy.data.splits.registry import split_from_config, split_params
from raystudy.keys import TRANSFER, eval_key, metric_key, transfer_key
from raystudy.metrics import (
    INTERVENTION_METRICS,
    FeasibleSampler,
    draw_pool,
    evaluate_intervention,
    get_metric,
    transfer,
)
from raystudy.metrics.composition import composition_nll, triple_batch
from raystudy.metrics.probes import probe_applies, probe_implementation
from raystudy.metrics.unsupervised import decoder_scores, unsupervised
from raystudy.models import OBJECTIVES, VAE
from raystudy.phases import phase
from raystudy.probe_data import nonfinite, probe_sets, scoring_device
from raystudy.spec import EvaluationConfig, TrialConfig

#: A representation: images [B, C, H, W] in [0, 1] -> codes [B, D].
Represent = Callable[[torch.Tensor], torch.Tensor]
#: Factor indices [N, K] -> codes [N, D], for a representation no image gives (gt_decoder).
CodesOf = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class FixedSample:
    """The encoder-set draw the fixed-sample metrics scored: factor indices (N + M, K), their
    codes (N + M, D), N the training part, and the threads the metrics were given; what a
    figure of those metrics needs to show the very fit they logged."""

    points: np.ndarray
    codes: np.ndarray
    num_train: int
    n_jobs: int


class Scores(dict[str, float]):
    """Scores by key, and the parts left unscored because the codes they read were not
    finite (`invalid`: the part's keys, e.g. ``dis/*``, -> what was wrong); `fixed`, the
    sample the fixed-sample metrics scored (None when none did); `probes`, how each probe
    scored computed (name -> `probe_implementation`), which a run keeps as tags.

    The metrics themselves treat a non-finite code dimension as dead (set to 0, with a
    warning), which would make a model whose encoder broke look merely less disentangled;
    a trained model's scores are instead left out, and the trial says so in a tag.
    """

    def __init__(self, *args: object, **kwargs: float) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.invalid: dict[str, str] = {}
        self.fixed: FixedSample | None = None
        self.probes: dict[str, str] = {}


def build_split(config: TrialConfig, dataset: GroundTruthDataset) -> Split:
    """The split a trial trains and is scored on: a built-in one by name (with options, if
    given), or one written in the spec; a split whose sets depend on the seed (Dittadi's
    `held_out: per_seed`) gets the trial's."""
    return split_from_config(config.split, dataset, where="split", seed=config.seed)


def split_run_params(config: TrialConfig) -> dict[str, str]:
    """What the trial's split resolved from its options and the seed, as run params beside
    the config's (Dittadi's held-out hues: `split.held_out_hues`)."""
    return split_params(config.split, config.seed)


@torch.no_grad()
def encode_codes(
    represent: Represent,
    dataset: GroundTruthDataset,
    indices: np.ndarray,
    device: torch.device,
    domain: str = "sim",
    batch_size: int = 256,
) -> np.ndarray:
    """The codes `represent` gives the images of `indices`, rendered in `domain`, batch by
    batch, as a float64 numpy array."""
    out = []
    for start in range(0, len(indices), batch_size):
        idx = torch.from_numpy(indices[start : start + batch_size]).to(device)
        out.append(torch.as_tensor(represent(dataset.render(idx, domain=domain))).cpu())
    return torch.cat(out).numpy().astype(np.float64)


def model_representation(model: VAE) -> Represent:
    """A trained model's representation of images: its posterior means."""
    return lambda x: model.encode(x)[0]


def encode_means(
    model: VAE,
    dataset: GroundTruthDataset,
    indices: np.ndarray,
    device: torch.device,
    domain: str = "sim",
    batch_size: int = 256,
) -> np.ndarray:
    """The representation of the images of `indices`, rendered in `domain`, as a numpy
    array: the posterior means, or for gt_decoder (`code_is_ground_truth`) the normalised
    ground-truth factors themselves, which no image can change."""
    if model.code_is_ground_truth:
        return dataset.factors.normalise(np.asarray(indices)).astype(np.float64)
    return encode_codes(model_representation(model), dataset, indices, device, domain, batch_size)


def render_all(
    dataset: GroundTruthDataset, indices: np.ndarray, device: torch.device, batch_size: int = 256
) -> torch.Tensor:
    return torch.cat(
        [
            dataset.render(torch.from_numpy(indices[i : i + batch_size]).to(device))
            for i in range(0, len(indices), batch_size)
        ]
    )


def reconstruction_scores(
    model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device, seed: int
) -> dict[str, float]:
    """eval/* of the images of `idx`: the ELBO and its terms through the posterior, or for a
    model whose code is the ground truth (gt_decoder) the decoder's likelihood of each image
    given its true factors, which is what Montero et al. (2021) score on held-out
    combinations."""
    images = render_all(dataset, idx, device)
    if model.code_is_ground_truth:
        return decoder_scores(
            model, images, torch.from_numpy(encode_means(model, dataset, idx, device))
        )
    return unsupervised(model, images, seed=seed)


def eval_scores(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    evaluation: EvaluationConfig,
    device: torch.device,
) -> dict[str, float]:
    """The eval/* scores (`reconstruction_scores`) of `evaluation.num_eval_images` images of
    the encoder set, and of the held-out set when the split has one (`eval/*_heldout`); none
    when num_eval_images is 0. The images and posterior noise depend on `evaluation.seed`
    alone, so two models (a model and its decoder test) are scored on the same ones.

    A composition model (one with a `transform`) never decodes one image's code: its eval/*
    are Montero et al. (2021)'s Table 1 NLLs (`raystudy.metrics.composition`), of as many
    training triples as `eval/composition_nll` and, when the split holds combinations out, of
    as many triples with a held-out target as `eval/composition_nll_heldout`."""
    seed, n = evaluation.seed, evaluation.num_eval_images
    if not n:
        return {}
    held_out = "heldout" in split.roles
    # Per set: what is drawn (roles or a role), its random stream, and whether it is held out.
    sets: list[tuple[Any, int, bool]]
    score: Callable[[Any, np.random.Generator], dict[str, float]]
    if model.transform is not None:
        sets = [(TRAIN_ROLES, 8, False)] + ([(HELDOUT_ROLES, 9, True)] if held_out else [])

        def score(roles: Any, rng: np.random.Generator) -> dict[str, float]:
            triples = sample_triples(split, n, rng, roles)
            return composition_nll(model, triple_batch(dataset, triples, device), seed=seed)

    else:
        # Montero et al. (2021): how well the model reconstructs combinations it never trained
        # on ("heldout"), beside how well it reconstructs the ones it did.
        sets = [("encoder", 1, False)] + ([("heldout", 5, True)] if held_out else [])

        def score(role: Any, rng: np.random.Generator) -> dict[str, float]:
            return reconstruction_scores(model, dataset, split.sample(role, n, rng), device, seed)

    results: dict[str, float] = {}
    for which, stream, heldout in sets:
        scores = score(which, np.random.default_rng([seed, stream]))
        results.update({eval_key(k, heldout=heldout): v for k, v in scores.items()})
    return results


def score_model(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
    n_jobs: int = 1,
) -> Scores:
    """All eval/*, dis/*, down/* and transfer/* metrics of a trained model; parts whose codes
    are not finite are left out and named in the result's `invalid`.

    Ground-truth draws depend only on `evaluation.seed`, never on the trial's seed, so every
    model of a study is scored on the same points (as disentanglement_lib's studies do).
    """
    ev = config.evaluation
    # Each part is skipped when configured away (a dry study, a study of one metric).
    with phase("eval"):
        results = Scores(eval_scores(model, dataset, split, ev, device))

    # For gt_decoder, the factors themselves are the code every metric scores.
    def truth(idx: np.ndarray) -> np.ndarray:
        return encode_means(model, dataset, idx, device)

    represented = score_representation(
        model_representation(model),
        dataset,
        split,
        ev,
        device,
        n_jobs=n_jobs,
        factor_sized=OBJECTIVES.get(config.model.objective).code_is_factor_sized,
        codes_of=truth if model.code_is_ground_truth else None,
    )
    results.update(represented)
    results.invalid.update(represented.invalid)
    results.fixed = represented.fixed
    results.probes = represented.probes
    return results


def score_representation(
    represent: Represent,
    dataset: GroundTruthDataset,
    split: Split,
    evaluation: EvaluationConfig,
    device: torch.device,
    n_jobs: int = 1,
    factor_sized: bool = False,
    codes_of: CodesOf | None = None,
    progress: Callable[[str], None] | None = None,
) -> Scores:
    """The dis/*, down/* and transfer/* metrics of a representation, on the draws
    `evaluation.seed` fixes: what `score_model` reports of a trained model but eval/*, which
    needs a decoder. A part whose codes hold NaN or inf is not scored: its keys are absent
    and the result's `invalid` says why.

    `represent` maps images to codes; `codes_of`, when given, maps factor indices to codes
    instead (a representation no image gives: gt_decoder's). `factor_sized` says whether code
    column k stands for factor k, which the `own` probe needs. `progress` is told each
    metric and each scenario's probes as they start.
    """
    say = progress or (lambda message: None)
    ev = evaluation
    seed = ev.seed
    results = Scores()
    on = scoring_device(ev.device, device)  # before any work: a missing GPU fails first

    def codes(idx: np.ndarray, domain: str = "sim") -> np.ndarray:
        with phase("encode"):
            if codes_of is not None:
                return np.asarray(codes_of(idx), dtype=np.float64)
            return encode_codes(represent, dataset, idx, device, domain)

    n_train = ev.num_train
    fixed = [m for m in ev.metrics if m not in INTERVENTION_METRICS]
    if fixed:
        say(f"encoding {n_train + ev.num_test} images")
        points = split.sample("encoder", n_train + ev.num_test, np.random.default_rng([seed, 2]))
        fixed_codes = codes(points)
        wrong = nonfinite(fixed_codes)
        if wrong is not None:
            results.invalid[_fixed_part(fixed)] = wrong
            fixed = []
        else:
            results.fixed = FixedSample(points, fixed_codes, n_train, n_jobs)
    for name in fixed:
        say(f"metric {name}")
        fn = get_metric(name)
        with phase(f"metric/{name}"):
            scores = fn(
                fixed_codes[:n_train],
                points[:n_train],
                fixed_codes[n_train:],
                points[n_train:],
                seed=seed,
                n_jobs=n_jobs,
            )
        # Downstream accuracy is reported as down/*, the disentanglement scores as dis/*.
        results.update({metric_key(fn.namespace, k): v for k, v in scores.items()})

    intervention = [m for m in ev.metrics if m in INTERVENTION_METRICS]
    if intervention:
        # Observations are drawn inside the encoder set only: the score is about what the
        # model was trained on, as for the fixed-sample metrics. One pool serves every
        # intervention metric (each would draw this same one), and for gt_decoder it holds
        # the factors themselves, the representation every other metric scores.
        with phase("encode"):
            pool = draw_pool(
                dataset,
                represent,
                sampler=FeasibleSampler(dataset, accept=lambda idx: split.mask("encoder", idx)),
                seed=seed,
                device=device,
                codes_of=codes_of,
            )
        wrong = nonfinite(pool.codes)
        if wrong is not None:
            results.invalid[", ".join(metric_key("dis", m) for m in intervention)] = wrong
            intervention = []
        for name in intervention:
            say(f"metric {name}")
            with phase(f"metric/{name}"):
                scores = evaluate_intervention(
                    name, dataset, represent, seed=seed, pool=pool, n_jobs=n_jobs
                )
            results.update({metric_key("dis", k): v for k, v in scores.items()})

    names, sizes = dataset.factors.names, dataset.factors.sizes
    probes = [p for p in ev.probes if probe_applies(p, factor_sized)]
    if not probes:
        return results
    for data in probe_sets(split, ev, codes, say=say, asking=", ".join(probes)):
        if data.invalid is not None:
            results.invalid[f"{TRANSFER}{data.name}/*"] = data.invalid
            continue
        for probe in probes:
            with phase(f"probe/{probe}"):
                scores = transfer(
                    data.z_train,
                    data.train_idx,
                    data.z_test,
                    data.test_idx,
                    sizes,
                    names,
                    ood_factors=data.scenario.ood_factors,
                    r2_variance=data.scenario.r2_variance,
                    probe=probe,
                    seed=seed,
                    n_jobs=n_jobs,
                    device=on,
                )
            results.update({transfer_key(data.name, probe, k): v for k, v in scores.items()})
            results.probes[probe] = probe_implementation(probe, on)
    return results


def _fixed_part(names: list[str]) -> str:
    """How the invalid note names the keys of the fixed-sample metrics `names`."""
    return ", ".join(metric_key(get_metric(n).namespace, f"{n}*") for n in names)
