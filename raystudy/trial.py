"""One trial end to end: data, split, training, evaluation, artifacts, report.

Knows nothing of Ray: `raystudy.tune.adapter` hands it a `Reporter` that forwards results and
checkpoints to Tune. Every metric goes to MLflow through `tracking.writer` as soon as it exists,
so a trial that fails later loses nothing already measured.
"""

from __future__ import annotations

import copy
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split, get_dataset, get_split
from raystudy.data.splits import split_from_spec, split_tag
from raystudy.metrics import (
    INTERVENTION_METRICS,
    FeasibleSampler,
    draw_pool,
    evaluate_intervention,
    get_metric,
    transfer,
)
from raystudy.metrics.unsupervised import unsupervised
from raystudy.models import VAE, build, model_cost
from raystudy.models.params import trial_params
from raystudy.spec import TrialConfig
from raystudy.tags import (
    ARTIFACT_ERROR_TAG,
    DIVERGED_TAG,
    ERROR_TAG,
    GPU_IDS_TAG,
    NODE_TAG,
    SPLIT_TAG,
    STUDY_TAG,
    VERSION_TAG,
)
from raystudy.tracking.writer import TrialRun
from raystudy.train import TrainingDiverged, train

#: Reported with the final metrics. ("done" would be Tune's reserved stop key.)
EVALUATED = "evaluated"


def error_tags(exc: BaseException) -> dict[str, str]:
    """Tags of a failed run: the error, and for a diverged trial the step it was caught at."""
    tags = {ERROR_TAG: f"{type(exc).__name__}: {exc}"[:5000]}
    if isinstance(exc, TrainingDiverged):
        tags[DIVERGED_TAG] = str(exc.step)
    return tags


class Reporter(Protocol):
    """Where a trial's results and checkpoints go (Tune in a study, a list in a notebook)."""

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None: ...

    def restore(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class TrialContext:
    tracking_uri: str
    experiment_id: str
    parent_run_id: str | None
    study: str
    trial_id: str
    trial_name: str
    cpus: float = 1.0
    code_version: str = ""
    node: str = ""
    gpu_ids: str = ""


def build_split(config: TrialConfig, dataset: GroundTruthDataset) -> Split:
    if isinstance(config.split, str):
        return get_split(config.split, dataset)
    return split_from_spec(config.split, dataset, where="split")


@torch.no_grad()
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
    out = []
    for start in range(0, len(indices), batch_size):
        idx = torch.from_numpy(indices[start : start + batch_size]).to(device)
        out.append(model.encode(dataset.render(idx, domain=domain))[0].cpu())
    return torch.cat(out).numpy().astype(np.float64)


def render_all(
    dataset: GroundTruthDataset, indices: np.ndarray, device: torch.device, batch_size: int = 256
) -> torch.Tensor:
    return torch.cat(
        [
            dataset.render(torch.from_numpy(indices[i : i + batch_size]).to(device))
            for i in range(0, len(indices), batch_size)
        ]
    )


def evaluate(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
    n_jobs: int = 1,
) -> dict[str, float]:
    """All eval/*, dis/* and transfer/* metrics of a trained model.

    Ground-truth draws depend only on `evaluation.seed`, never on the trial's seed, so every
    model of a study is scored on the same points (as disentanglement_lib's studies do).
    """
    ev = config.evaluation
    seed = ev.seed
    results: dict[str, float] = {}

    # Each part is skipped when configured away (a dry study, a study of one metric).
    if ev.num_eval_images:
        rng = np.random.default_rng([seed, 1])
        images = render_all(dataset, split.sample("encoder", ev.num_eval_images, rng), device)
        scores = unsupervised(model, images, seed=seed)
        results.update({f"eval/{k}": v for k, v in scores.items()})
        if "heldout" in split.roles:
            # Montero et al. (2021): how well the model reconstructs combinations it never
            # trained on, beside how well it reconstructs the ones it did.
            rng = np.random.default_rng([seed, 5])
            unseen = render_all(dataset, split.sample("heldout", ev.num_eval_images, rng), device)
            scores = unsupervised(model, unseen, seed=seed)
            results.update({f"eval/{k}_heldout": v for k, v in scores.items()})

    n_train = ev.num_train
    fixed = [m for m in ev.metrics if m not in INTERVENTION_METRICS]
    if fixed:
        points = split.sample("encoder", n_train + ev.num_test, np.random.default_rng([seed, 2]))
        codes = encode_means(model, dataset, points, device)
    for name in fixed:
        fn = get_metric(name)
        scores = fn(
            codes[:n_train],
            points[:n_train],
            codes[n_train:],
            points[n_train:],
            seed=seed,
            n_jobs=n_jobs,
        )
        # Downstream accuracy is reported as down/*, the disentanglement scores as dis/*.
        namespace = getattr(fn, "namespace", "dis")
        results.update({f"{namespace}/{k}": v for k, v in scores.items()})

    intervention = [m for m in ev.metrics if m in INTERVENTION_METRICS]
    if intervention:
        # Observations are drawn inside the encoder set only: the score is about what the
        # model was trained on, as for the fixed-sample metrics. One pool serves every
        # intervention metric (each would draw this same one), and for gt_decoder it holds
        # the factors themselves, the representation every other metric scores.
        def represent(x: torch.Tensor) -> torch.Tensor:
            return model.encode(x)[0]

        def truth(idx: np.ndarray) -> np.ndarray:
            return encode_means(model, dataset, idx, device)

        pool = draw_pool(
            dataset,
            represent,
            sampler=FeasibleSampler(dataset, accept=lambda idx: split.mask("encoder", idx)),
            seed=seed,
            device=device,
            codes_of=truth if model.code_is_ground_truth else None,
        )
        for name in intervention:
            scores = evaluate_intervention(
                name, dataset, represent, seed=seed, pool=pool, n_jobs=n_jobs
            )
            results.update({f"dis/{k}": v for k, v in scores.items()})

    names, sizes = dataset.factors.names, dataset.factors.sizes
    for i, (scenario_name, scenario) in enumerate(split.scenarios.items()):
        if not ev.probes:
            break
        rng = np.random.default_rng([seed, 3, i])
        train_idx = split.sample(f"{scenario_name}/train", ev.probe_train, rng)
        test_idx = split.sample(f"{scenario_name}/test", ev.probe_test, rng)
        train_domain, test_domain = scenario.probe_domains
        z_train = encode_means(model, dataset, train_idx, device, train_domain)
        z_test = encode_means(model, dataset, test_idx, device, test_domain)
        for probe in ev.probes:
            scores = transfer(
                z_train,
                train_idx,
                z_test,
                test_idx,
                sizes,
                names,
                ood_factors=scenario.ood_factors,
                r2_variance=scenario.r2_variance,
                probe=probe,
                seed=seed,
                n_jobs=n_jobs,
            )
            results.update({f"transfer/{scenario_name}/{probe}/{k}": v for k, v in scores.items()})
    return results


def log_artifacts(
    run: TrialRun,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
) -> None:
    """The trial config, inputs over reconstructions, latent traversals and (when DCI is
    evaluated) its importance matrix as a Hinton diagram, for the MLflow UI.

    The figures only explain numbers already logged: one that cannot be drawn is recorded in
    the tag `raystudy.artifact_error` instead of failing a trained and evaluated trial.
    """
    from functools import partial

    from raystudy import artifacts

    seed = config.evaluation.seed
    idx = split.sample("encoder", 8, np.random.default_rng([seed, 4]))
    with torch.no_grad():
        x = dataset.render(torch.from_numpy(idx).to(device))
        recon = torch.sigmoid(model.decode(model.encode(x)[0]))
    strip = np.stack([x.cpu().numpy(), recon.cpu().numpy()])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config_path = folder / "trial_config.json"
        config_path.write_text(json.dumps(config.model_dump(mode="json"), indent=2))
        run.log_artifact(config_path)
        recon_png = folder / "reconstructions.png"
        artifacts.grid_figure(
            strip,
            ["input", "reconstruction"],
            [""] * strip.shape[1],
            "held-out inputs and their reconstructions (decoder mean of the posterior mean)",
        ).savefig(recon_png, dpi=110)
        run.log_artifact(recon_png)
        drawers = [("traversals", partial(_traversals, folder, model, dataset, idx, device))]
        if "dci" in config.evaluation.metrics:
            hinton = partial(_dci_hinton, folder, model, dataset, split, config, device)
            drawers.append(("dci_importance", hinton))
        errors = []
        for name, draw in drawers:
            try:
                path = draw()
            except Exception as exc:  # recorded on the run: see the docstring
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if path is not None:
                run.log_artifact(path)
        if errors:
            run.set_tags({ARTIFACT_ERROR_TAG: "; ".join(errors)[:5000]})


def _traversals(
    folder: Path, model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device
) -> Path:
    """One row per code dimension, traversed from the code of the first image of `idx`."""
    from raystudy import artifacts

    code = encode_means(model, dataset, idx[:1], device)[0]
    # A ground-truth code lives in [0, 1] (normalised factors); a VAE code under its prior.
    low, high = (0.0, 1.0) if model.code_is_ground_truth else (-2.0, 2.0)
    values = np.linspace(low, high, artifacts.TRAVERSAL_STEPS)
    images = artifacts.decode_images(model, artifacts.traversal_codes(code, values), device)
    grid = images.reshape(code.shape[0], values.size, *images.shape[1:])
    path = folder / "traversals.png"
    artifacts.grid_figure(
        grid,
        [f"z{j}" for j in range(code.shape[0])],
        [f"{v:+.2f}" for v in values],
        "latent traversals: row j sets z_j to each value, the rest at one image's code",
        xlabel="value of z_j",
    ).savefig(path, dpi=110)
    return path


def _dci_hinton(
    folder: Path,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
) -> Path | None:
    """DCI's importance matrix refitted on a capped sample (see `raystudy.artifacts`)."""
    from raystudy import artifacts
    from raystudy.metrics.dci import completeness, disentanglement, importance_matrix

    ev = config.evaluation
    n_train = min(ev.num_train, artifacts.DCI_TRAIN) or artifacts.DCI_TRAIN
    n_test = min(ev.num_test, artifacts.DCI_TEST) or artifacts.DCI_TEST
    points = split.sample("encoder", n_train + n_test, np.random.default_rng([ev.seed, 5]))
    varies = np.array([np.unique(points[:, k]).size > 1 for k in range(points.shape[1])])
    if not varies.any():
        return None
    codes = encode_means(model, dataset, points, device)
    importance, _, _ = importance_matrix(
        codes[:n_train],
        points[:n_train, varies],
        codes[n_train:],
        points[n_train:, varies],
        seed=ev.seed,
        # One thread: on a busy node, multi-threaded xgboost slowed ~20x here (each boosting
        # round syncs its threads), and this small refit gains little from more.
        n_jobs=1,
    )
    names = [n for n, v in zip(dataset.factors.names, varies, strict=True) if v]
    title = (
        f"DCI importance, refitted on {n_train} points: "
        f"D={disentanglement(importance):.2f}, C={completeness(importance):.2f}"
    )
    path = folder / "dci_importance.png"
    artifacts.hinton_figure(importance, names, title).savefig(path, dpi=110)
    return path


def run_tags(config: TrialConfig, ctx: TrialContext) -> dict[str, str]:
    """The tags of a model's MLflow run: its study, code, placement and split."""
    return {
        STUDY_TAG: ctx.study,
        VERSION_TAG: ctx.code_version,
        NODE_TAG: ctx.node,
        GPU_IDS_TAG: ctx.gpu_ids,
        SPLIT_TAG: split_tag(config.split),
    }


def run_trial(config: TrialConfig, ctx: TrialContext, reporter: Reporter) -> dict[str, float]:
    """Train and evaluate one model; every result goes to MLflow and to `reporter`."""
    threads = max(1, int(ctx.cpus))
    torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # The model is built before the run opens, so that its size and cost are among the
    # run's params; a failure here is recorded on the run like any other (raised below).
    setup_error: Exception | None = None
    model_params: dict[str, int] = {}
    try:
        dataset = get_dataset(config.dataset.name, **config.dataset.options)
        torch.manual_seed(config.seed)  # the initial weights are part of what the seed fixes
        model, objective = build(
            config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
        )
        model.to(device)
        # Consumes random numbers; train() seeds again before it draws any.
        model_params = model_cost(
            model,
            objective,
            dataset.channels,
            dataset.resolution,
            dataset.factors.num_factors,
            config.train.batch_size,
        )
    except Exception as exc:
        setup_error = exc
    run = TrialRun.open(
        ctx.tracking_uri,
        ctx.experiment_id,
        ctx.trial_id,
        ctx.trial_name,
        params={**trial_params(config), **model_params},
        tags=run_tags(config, ctx),
        parent_run_id=ctx.parent_run_id,
    )
    if run.finished is not None:
        # Everything was measured and logged before the interruption: hand Tune the same
        # results instead of evaluating (and logging) them a second time.
        reporter.report({"step": float(config.train.steps), **run.finished, EVALUATED: 1.0})
        return run.finished
    try:
        if setup_error is not None:
            raise setup_error
        split = build_split(config, dataset)
        logged_up_to = run.last_step("train/loss")

        def on_progress(
            step: int, row: dict[str, float] | None, state: dict[str, Any] | None
        ) -> None:
            if row is not None and step > logged_up_to:
                run.log_metrics(row, step)
            reporter.report({"step": float(step), **(row or {})}, state)

        train(
            model,
            objective,
            dataset,
            split,
            config.train,
            seed=config.seed,
            device=device,
            on_progress=on_progress,
            resume_from=reporter.restore(),
        )
        results = evaluate(model, dataset, split, config, device, n_jobs=threads)
        run.log_metrics(results, step=config.train.steps)
        log_artifacts(run, model, dataset, split, config, device)
    except SystemExit:
        # Tune stops a trial (a scheduler's decision, the study's end) by raising SystemExit
        # from report(): the run was cut short, it did not fail.
        run.finish("KILLED")
        raise
    except BaseException as exc:
        run.set_tags(error_tags(exc))
        run.finish("FAILED" if not isinstance(exc, KeyboardInterrupt) else "KILLED")
        raise
    # The run is complete before the last report: Tune may end the trial inside report().
    run.finish("FINISHED")
    reporter.report({"step": float(config.train.steps), **results, EVALUATED: 1.0})
    return results


class LocalReporter:
    """A Reporter for running a trial in this process (a notebook, a benchmark, `plan`).

    Results are kept in order; the latest checkpoint state stays in memory, so a second
    `run_trial` with the same reporter resumes where the first stopped.
    """

    def __init__(self) -> None:
        self.results: list[dict[str, float]] = []
        self.state: dict[str, Any] | None = None

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        self.results.append(dict(metrics))
        if state is not None:
            # The state holds the live model, optimiser and history: kept as it is, it
            # would follow training past this checkpoint (Tune saves it to disk at once).
            self.state = copy.deepcopy(state)

    def restore(self) -> dict[str, Any] | None:
        return self.state
