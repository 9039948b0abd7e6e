"""Models per hour: S seeds trained as one stack (`seeds_per_trial: S`) against S lone runs.

    python -m bench.seeds_per_trial [--sizes 1 2 4 8] [--rounds 5] [--steps 20]
                                    [--trials [--trial-sizes 4] [--trial-rounds 2]]
                                    [--device cpu|cuda] [--json PATH]

The smoke study's model and training settings (`search_spaces/smoke.yaml`: conv beta-VAE,
10 latents, batch 32, colour-dSprites under the Dittadi hue split), one torch thread on CPU.

- training (always): per S, `--steps` steps of S lone ``raystudy.training.loop.train`` runs one
  after another against one ``raystudy.training.stacked.train_stacked`` of the same S seeds,
  alternating round by round (`bench._table.interleaved`); the speed-up is the median
  per-round ratio of the two wall times, i.e. how many more models per hour the stack trains.
- whole trials (``--trials``): S complete smoke-size trials (300 steps, evaluation, artifacts,
  a sqlite MLflow store) run one after another in this process (`raystudy.trials.single.run_trial`)
  against one stacked trial (`raystudy.trials.stacked.run_seed_stack`) of the same S seeds: the
  models-per-hour a core delivers either way, training and evaluation included (median
  over ``--trial-rounds`` rounds of alternating order).

On a CUDA device the same figures answer how many small VAEs one GPU trains at once; pass
``--device cuda --sizes 1 8 32``. ``--batching vmap`` forces the batched pass on CPU too.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import mlflow
import torch

from bench._table import Load, interleaved, markdown, median_ratio, quartiles, record, write_json
from raystudy.checks import load_spec
from raystudy.data import get_dataset
from raystudy.models import build
from raystudy.scoring import build_split
from raystudy.spec import TrialConfig
from raystudy.training.loop import train
from raystudy.training.stacked import train_stacked
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial
from raystudy.trials.stacked import run_seed_stack
from raystudy.tune.points import trial_labels

SMOKE = Path(__file__).resolve().parents[1] / "search_spaces" / "smoke.yaml"


def smoke_config(steps: int | None = None) -> TrialConfig:
    config = load_spec(SMOKE).trials()[0]
    if steps is not None:
        config = config.model_copy(
            update={"train": config.train.model_copy(update={"steps": steps})}
        )
    return config


def _models(config: TrialConfig, dataset: Any, seeds: list[int], device: torch.device) -> list:
    out = []
    for seed in seeds:
        torch.manual_seed(seed)
        model, objective = build(
            config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
        )
        out.append((model.to(device), objective))
    return out


def training(
    size: int, steps: int, rounds: int, device: torch.device, batching: str = "auto"
) -> dict[str, Any]:
    config = smoke_config(steps)
    dataset = get_dataset(config.dataset.name)
    split = build_split(config, dataset)
    seeds = list(range(size))

    def lone() -> float:
        pairs = _models(config, dataset, seeds, device)
        start = time.perf_counter()
        for (model, objective), seed in zip(pairs, seeds, strict=True):
            train(model, objective, dataset, split, config.train, seed=seed, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    def stacked() -> float:
        pairs = _models(config, dataset, seeds, device)
        start = time.perf_counter()
        train_stacked(
            [m for m, _ in pairs],
            pairs[0][1],
            dataset,
            split,
            config.train,
            seeds=seeds,
            device=device,
            batching=batching,  # type: ignore[arg-type]
        )
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    times = interleaved({"lone": lone, "stacked": stacked}, rounds)
    per_model_steps = steps * size
    return {
        "size": size,
        "steps": steps,
        "lone_model_steps_per_s": per_model_steps / statistics.median(times["lone"]),
        "stacked_model_steps_per_s": per_model_steps / statistics.median(times["stacked"]),
        "speedup": median_ratio(times["lone"], times["stacked"]),
        "speedup_quartiles": quartiles(
            [a / b for a, b in zip(times["lone"], times["stacked"], strict=True)]
        ),
    }


def whole_trials(size: int, rounds: int = 1) -> dict[str, Any]:
    """S lone smoke trials vs one stacked trial of S seeds, each time in a fresh sqlite
    store, after one warm-up trial; `rounds` > 1 alternates the order (lone first, then
    stacked first, ...) so a drift in the machine's load favours neither."""
    config = smoke_config()
    configs = [config.model_copy(update={"seed": s}) for s in range(size)]
    labels = trial_labels([{"seed": s} for s in range(size)])
    walls: dict[str, list[float]] = {"lone": [], "stacked": []}
    with tempfile.TemporaryDirectory() as tmp:

        def context(name: str) -> TrialContext:
            uri = f"sqlite:///{Path(tmp) / name}.db"
            experiment = mlflow.MlflowClient(uri).create_experiment(
                name, artifact_location=str(Path(tmp) / f"{name}-artifacts")
            )
            return TrialContext(uri, experiment, None, "bench", name, name)

        # A Ray worker imports torch's FLOP counter, xgboost, sklearn and matplotlib once and
        # then runs trial after trial; a warm-up trial puts both variants in that state, so
        # the first one timed does not pay ~3 s of imports the second is spared.
        run_trial(smoke_config(steps=2), context("warm"), LocalReporter())
        for r in range(rounds):
            order = ("lone", "stacked") if r % 2 == 0 else ("stacked", "lone")
            for variant in order:
                ctx = context(f"{variant}{r}")
                start = time.perf_counter()
                if variant == "lone":
                    for c, label in zip(configs, labels, strict=True):
                        run_trial(c, dataclasses.replace(ctx, trial_id=label), LocalReporter())
                else:
                    run_seed_stack(configs, ctx, LocalReporter(), labels)
                walls[variant].append(time.perf_counter() - start)
                print(
                    f"  round {r} {variant}: {walls[variant][-1]:.1f} s for {size} models"
                    f"  [{Load.now()}]",
                    flush=True,
                )
    lone, stacked = statistics.median(walls["lone"]), statistics.median(walls["stacked"])
    return {
        "size": size,
        "rounds": rounds,
        "lone_walls_s": walls["lone"],
        "stacked_walls_s": walls["stacked"],
        "lone_s": lone,
        "stacked_s": stacked,
        "lone_models_per_hour": 3600 * size / lone,
        "stacked_models_per_hour": 3600 * size / stacked,
        "speedup": median_ratio(walls["lone"], walls["stacked"]),
    }


def table(payload: dict[str, Any]) -> str:
    rows = [
        (
            r["size"],
            f"{r['lone_model_steps_per_s']:.1f}",
            f"{r['stacked_model_steps_per_s']:.1f}",
            f"{r['speedup']:.2f} ({r['speedup_quartiles'][0]:.2f}-{r['speedup_quartiles'][1]:.2f})",
        )
        for r in payload["training"]
    ]
    out = markdown(["S", "lone model-steps/s", "stacked model-steps/s", "speed-up (IQR)"], rows)
    if payload.get("trials"):
        trows = [
            (
                r["size"],
                f"{r['lone_s']:.0f}",
                f"{r['stacked_s']:.0f}",
                f"{r['lone_models_per_hour']:.0f}",
                f"{r['stacked_models_per_hour']:.0f}",
                f"{r['speedup']:.2f}",
            )
            for r in payload["trials"]
        ]
        out += "\n\n" + markdown(
            ["S", "lone s", "stacked s", "lone models/h", "stacked models/h", "speed-up"], trows
        )
    return out


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    device = payload.get("device", "cpu")
    rows = [
        (
            f"seeds_per_trial S={r['size']} training ({device})",
            f"x{r['speedup']:.2f} models/h vs lone runs",
        )
        for r in payload["training"]
    ]
    rows += [
        (
            f"seeds_per_trial S={r['size']} whole trials ({device})",
            f"{r['stacked_models_per_hour']:.0f} vs {r['lone_models_per_hour']:.0f} models/h "
            f"(x{r['speedup']:.2f})",
        )
        for r in payload.get("trials", [])
    ]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="training steps per round")
    parser.add_argument("--trials", action="store_true", help="also time whole smoke trials")
    parser.add_argument("--trial-sizes", type=int, nargs="+", default=[4])
    parser.add_argument(
        "--trial-rounds", type=int, default=1, help="whole-trial rounds, order alternating"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--batching", choices=["auto", "vmap", "loop"], default="auto", help="see train_stacked"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    started = Load.now()
    payload: dict[str, Any] = {
        "device": args.device,
        "threads": args.threads,
        "batching": args.batching,
        "training": [],
    }
    for size in args.sizes:
        row = training(size, args.steps, args.rounds, device, args.batching)
        print(f"S={size}: x{row['speedup']:.2f}  [{Load.now()}]", flush=True)
        payload["training"].append(row)
    if args.trials:
        payload["trials"] = [whole_trials(size, args.trial_rounds) for size in args.trial_sizes]
    print(table(payload))
    write_json(args.json, record("seeds_per_trial", started, payload))


if __name__ == "__main__":
    main()
