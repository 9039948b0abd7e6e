"""One trial end to end: data, split, training, evaluation, artifacts, report.

Knows nothing of Ray: `study.py` hands it a `Reporter` that forwards results and checkpoints to
Tune. Every metric goes to MLflow through `tracking.py` as soon as it exists, so a trial that
fails later loses nothing already measured.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split, get_dataset, get_split
from raystudy.data.splits import split_from_spec
from raystudy.metrics import get_metric, transfer
from raystudy.metrics.unsupervised import unsupervised
from raystudy.models import VAE, build_model, get_objective
from raystudy.spec import TrialConfig
from raystudy.tracking import TrialRun
from raystudy.train import train

#: Reported with the final metrics. ("done" would be Tune's reserved stop key.)
EVALUATED = "evaluated"


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
    """Posterior means of the images of `indices`, rendered in `domain`, as a numpy array."""
    out = []
    for start in range(0, len(indices), batch_size):
        idx = torch.from_numpy(indices[start : start + batch_size]).to(device)
        out.append(model.encode(dataset.render(idx, domain=domain))[0].cpu())
    return torch.cat(out).numpy().astype(np.float64)


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

    held_out = split.sample("encoder", ev.num_eval_images, np.random.default_rng([seed, 1]))
    images = torch.cat(
        [
            dataset.render(torch.from_numpy(held_out[i : i + 256]).to(device))
            for i in range(0, len(held_out), 256)
        ]
    )
    results.update({f"eval/{k}": v for k, v in unsupervised(model, images, seed=seed).items()})

    n_train = ev.num_train
    points = split.sample("encoder", n_train + ev.num_test, np.random.default_rng([seed, 2]))
    codes = encode_means(model, dataset, points, device)
    for name in ev.metrics:
        scores = get_metric(name)(
            codes[:n_train],
            points[:n_train],
            codes[n_train:],
            points[n_train:],
            seed=seed,
            n_jobs=n_jobs,
        )
        results.update({f"dis/{k}": v for k, v in scores.items()})

    names, sizes = dataset.factors.names, dataset.factors.sizes
    for i, (scenario_name, scenario) in enumerate(split.scenarios.items()):
        rng = np.random.default_rng([seed, 3, i])
        train_idx = split.sample(f"{scenario_name}/train", ev.probe_train, rng)
        test_idx = split.sample(f"{scenario_name}/test", ev.probe_test, rng)
        z_train = encode_means(model, dataset, train_idx, device, scenario.domain)
        z_test = encode_means(model, dataset, test_idx, device, scenario.domain)
        for probe in ev.probes:
            scores = transfer(
                z_train,
                train_idx,
                z_test,
                test_idx,
                sizes,
                names,
                ood_factors=scenario.ood_factors,
                probe=probe,
                seed=seed,
                n_jobs=n_jobs,
            )
            results.update({f"transfer/{scenario_name}/{probe}/{k}": v for k, v in scores.items()})
    return results


def _log_artifacts(
    run: TrialRun,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
) -> None:
    """The trial config and a strip of inputs over reconstructions, for the MLflow UI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idx = split.sample("encoder", 8, np.random.default_rng([config.evaluation.seed, 4]))
    with torch.no_grad():
        x = dataset.render(torch.from_numpy(idx).to(device))
        recon = torch.sigmoid(model.decode(model.encode(x)[0]))
    grid = torch.cat([torch.cat(list(x), dim=2), torch.cat(list(recon), dim=2)], dim=1)
    image = grid.permute(1, 2, 0).cpu().numpy()
    with tempfile.TemporaryDirectory() as tmp:
        config_path = Path(tmp) / "trial_config.json"
        config_path.write_text(json.dumps(config.model_dump(mode="json"), indent=2))
        run.log_artifact(config_path)
        png = Path(tmp) / "reconstructions.png"
        plt.imsave(png, image.squeeze(-1) if image.shape[-1] == 1 else image, cmap="gray")
        run.log_artifact(png)


def run_trial(config: TrialConfig, ctx: TrialContext, reporter: Reporter) -> dict[str, float]:
    """Train and evaluate one model; every result goes to MLflow and to `reporter`."""
    threads = max(1, int(ctx.cpus))
    torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    run = TrialRun.open(
        ctx.tracking_uri,
        ctx.experiment_id,
        ctx.trial_id,
        ctx.trial_name,
        params=config.flat(),
        tags={
            "raystudy.study": ctx.study,
            "raystudy.version": ctx.code_version,
            "split": config.split if isinstance(config.split, str) else "custom",
        },
        parent_run_id=ctx.parent_run_id,
    )
    try:
        dataset = get_dataset(config.dataset.name, **config.dataset.options)
        split = build_split(config, dataset)
        torch.manual_seed(config.seed)  # the initial weights are part of what the seed fixes
        model = build_model(
            config.model.architecture,
            dataset.channels,
            config.model.latent_dim,
            dataset.resolution,
        )
        objective = get_objective(config.model.objective, beta=config.model.beta)
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
        _log_artifacts(run, model, dataset, split, config, device)
    except SystemExit:
        # Tune stops a trial (a scheduler's decision, the study's end) by raising SystemExit
        # from report(): the run was cut short, it did not fail.
        run.finish("KILLED")
        raise
    except BaseException as exc:
        run.set_tags({"raystudy.error": f"{type(exc).__name__}: {exc}"[:5000]})
        run.finish("FAILED" if not isinstance(exc, KeyboardInterrupt) else "KILLED")
        raise
    # The run is complete before the last report: Tune may end the trial inside report().
    run.finish("FINISHED")
    reporter.report({"step": float(config.train.steps), **results, EVALUATED: 1.0})
    return results
