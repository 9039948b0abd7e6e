"""Which training settings reach the widest range of disentanglement per CPU second?

    python -m bench.laptop_settings [--budget 240] [--every 60] [--jobs 2] [--only NAME ...]
                                    [--json PATH]

The laptop study (``search_spaces/laptop.yaml``) has about an hour of two cores. This bench
trains each candidate setting with raystudy's own loop (``build_seeded`` + ``train``, one
torch thread, the candidates `--jobs` at a time in spawned processes) and scores DCI
disentanglement (Eastwood & Williams 2018; the gradient-boosted importances of Locatello et
al. 2019) every `--every` CPU seconds of training, up to `--budget` CPU seconds. The clock is
the training process's CPU time (``time.process_time``), scoring excluded, so candidates that
share the machine with other work are still compared on the same footing; wall seconds are
recorded beside it.

Every candidate starts from the same base: colour-dSprites on Dittadi et al.'s hue split
(``dittadi_hues``), Ada-GVAE (Locatello et al. 2020) with beta 1 and k 1, conv net, 10
latents, batch 64, seed 0; each changes one or two things (resolution, learning rate, batch
size, latent size, k, KL warm-up, or the unsupervised beta-VAE). DCI is computed on codes of
3,000 training and 1,000 test points drawn once (seed 0) from the split's encoder set, the
laptop study's `evaluation.num_train` / `num_test`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from copy import deepcopy
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench._table import Load, markdown, record, write_json
from raystudy.data import get_dataset
from raystudy.metrics.dci import dci
from raystudy.scoring import build_split, encode_means
from raystudy.spec import TrialConfig
from raystudy.training.loop import train
from raystudy.trials.common import build_seeded

BASE: dict[str, Any] = {
    "dataset": {"name": "color_dsprites", "options": {"resolution": 64}},
    "split": "dittadi_hues",
    "model": {"objective": "ada_gvae", "architecture": "conv", "latent_dim": 10, "beta": 1.0},
    "train": {"batch_size": 64, "lr": 1e-4, "report_every": 10_000},
    "seed": 0,
}

#: name -> changes to BASE (nested keys by dots).
CANDIDATES: dict[str, dict[str, Any]] = {
    "64px lr 1e-4": {},
    "64px lr 1e-3": {"train.lr": 1e-3},
    "32px lr 1e-4": {"dataset.options.resolution": 32},
    "32px lr 5e-4": {"dataset.options.resolution": 32, "train.lr": 5e-4},
    "32px lr 1e-3": {"dataset.options.resolution": 32, "train.lr": 1e-3},
    "32px lr 2e-3": {"dataset.options.resolution": 32, "train.lr": 2e-3},
    "32px lr 1e-3 batch 32": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.batch_size": 32,
    },
    "32px lr 1e-3 batch 128": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.batch_size": 128,
    },
    "32px lr 1e-3 latent 6": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "model.latent_dim": 6,
    },
    "32px lr 1e-3 k random": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "model.k": "random",
    },
    "32px lr 1e-3 warm-up 1000": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.kl_warmup_steps": 1000,
    },
    "32px lr 1e-3 beta-VAE": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "model.objective": "beta_vae",
    },
    "32px lr 1e-3 beta-VAE beta 4": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.batch_size": 32,
        "model.objective": "beta_vae",
        "model.beta": 4.0,
    },
    "32px lr 1e-3 beta-VAE beta 16": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.batch_size": 32,
        "model.objective": "beta_vae",
        "model.beta": 16.0,
    },
    "32px lr 1e-3 batch 32 beta 4": {
        "dataset.options.resolution": 32,
        "train.lr": 1e-3,
        "train.batch_size": 32,
        "model.beta": 4.0,
    },
}

NUM_TRAIN, NUM_TEST = 3000, 1000
FIRST_CHUNK = 40  # steps timed before the chunk sizes are set from the measured rate


def candidate_config(changes: dict[str, Any]) -> TrialConfig:
    raw = deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = raw
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return TrialConfig.model_validate(raw)


def run_candidate(args: tuple[str, float, float]) -> dict[str, Any]:
    """Train one candidate for `budget` CPU seconds, scoring DCI every `every` of them."""
    name, budget, every = args
    torch.set_num_threads(1)
    config = candidate_config(CANDIDATES[name])
    device = torch.device("cpu")
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    draws = np.random.default_rng(0)
    train_idx = split.sample("encoder", NUM_TRAIN, draws)
    test_idx = split.sample("encoder", NUM_TEST, draws)
    model, objective = build_seeded(config, dataset, device)

    state: dict[str, Any] | None = None

    def keep(step: int, row: dict[str, float] | None, s: dict[str, Any] | None) -> None:
        nonlocal state
        if s is not None:
            state = s

    steps, cpu, wall = 0, 0.0, 0.0
    points: list[dict[str, float]] = []
    for target in np.arange(every, budget + 1e-9, every):
        while cpu < 0.98 * target:  # the rate is re-measured after every chunk
            rate = steps / cpu if steps else 0.0
            chunk = max(1, round((target - cpu) * rate)) if steps else FIRST_CHUNK
            run_config = config.train.model_copy(update={"steps": steps + chunk})
            c0, w0 = time.process_time(), time.perf_counter()
            train(
                model,
                objective,
                dataset,
                split,
                run_config,
                seed=config.seed,
                device=device,
                on_progress=keep,
                resume_from=state,
            )
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            steps += chunk
        codes_train = encode_means(model, dataset, train_idx, device)
        codes_test = encode_means(model, dataset, test_idx, device)
        scores = dci(codes_train, train_idx, codes_test, test_idx)
        points.append(
            {
                "steps": steps,
                "cpu_s": round(cpu, 1),
                "wall_s": round(wall, 1),
                "dci_d": scores["dci_d"],
                "dci_i": scores["dci_i"],
            }
        )
        print(f"{name}: {steps} steps, {cpu:.0f} CPU s, DCI-D {scores['dci_d']:.3f}", flush=True)
    return {"name": name, "changes": CANDIDATES[name], "points": points}


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """One row per candidate for `python -m bench`: its speed and DCI-D at each score."""
    out = []
    for c in payload["candidates"]:
        last = c["points"][-1]
        curve = " ".join(f"{p['dci_d']:.2f}" for p in c["points"])
        out.append(
            (
                f"laptop settings: {c['name']}",
                f"{last['steps'] / last['cpu_s']:.1f} steps/CPU s; DCI-D {curve} "
                f"every {payload['every']:.0f} CPU s",
            )
        )
    return out


def table(payload: dict[str, Any]) -> str:
    every = payload["every"]
    marks = [every * (i + 1) for i in range(int(payload["budget"] // every))]
    rows = []
    for c in payload["candidates"]:
        last = c["points"][-1]
        rows.append(
            [
                c["name"],
                f"{last['steps'] / last['cpu_s']:.1f}",
                last["steps"],
                *(f"{p['dci_d']:.3f} ({p['cpu_s']:.0f} s)" for p in c["points"][: len(marks)]),
            ]
        )
    headers = ["candidate", "steps/CPU s", "steps", *(f"DCI-D @~{m:.0f} CPU s" for m in marks)]
    return markdown(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=240.0, help="CPU seconds of training")
    parser.add_argument("--every", type=float, default=60.0, help="CPU seconds between scores")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = Load.now()
    minutes = len(args.only) * args.budget * 1.3 / args.jobs / 60
    print(
        f"{len(args.only)} candidates x {args.budget:.0f} CPU s, {args.jobs} at a time: "
        f"about {minutes:.0f} minutes on idle cores ({started})"
    )
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        jobs = [(n, args.budget, args.every) for n in args.only]
        done = {r["name"]: r for r in pool.imap_unordered(run_candidate, jobs, chunksize=1)}
    results = [done[n] for n in args.only]
    payload = {"budget": args.budget, "every": args.every, "candidates": results}
    out = record("laptop_settings", started, payload)
    print(table(out))
    write_json(args.json, out)


if __name__ == "__main__":
    main()
