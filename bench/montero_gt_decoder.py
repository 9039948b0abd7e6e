"""Why does the ground-truth decoder reconstruct worse than the VAEs in a short run?

    python -m bench.montero_gt_decoder [--dataset dsprites] [--split montero_element]
                                       [--marks 500 1000 2000 3000] [--jobs 2]
                                       [--only NAME ...] [--json PATH]

Montero et al. (ICLR 2021, "The role of disentanglement in generalisation", Fig. 3) find the
ground-truth decoder's NLL below the end-to-end VAEs'. A 1,500-step run of
``search_spaces/montero2021.yaml`` found it above them (142-149 against 93-126 nats). Each
candidate here changes one thing against that run's GT decoder (Higgins et al.'s MLP decoder
fed the factors normalised to [0, 1], Adam at 1e-4, batch 64), trained with raystudy's own
loop (``build_seeded`` + ``train``, one torch thread, `--jobs` candidates at a time in spawned
processes), and a beta-VAE (beta 1, the conv net, 1e-4: the VAEs' setting) is the yardstick:

- ``lr 1e-3``: the authors' decoder training config (mmrl/disent-and-gen,
  ``scripts/configs/training.py::generation``: Adam, lr 0.001, batch 64);
- ``values``: the decoder reads the factors as the data files hold them (dSprites shape 1..3,
  orientation 0..2 pi, ...; 3dshapes orientation -30..30 degrees) instead of [0, 1], as the
  authors' ``Reconstruction`` datasets hand ``latent_values`` to it (``src/dataset/sprites.py``,
  ``shapes3d.py``). An affine map of the input, so the same functions, another optimisation;
- ``conv``: the VAEs' conv decoder instead of the MLP.

Every candidate is scored at each of `--marks` steps: the Bernoulli NLL (nats per image,
summed over pixels, ``eval/recon``) of 500 training and 500 held-out images of the split,
drawn by ``evaluation.seed`` alone, so every candidate sees the same ones.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from copy import deepcopy
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bench._table import Load, markdown, record, write_json
from raystudy.data import get_dataset
from raystudy.keys import eval_key
from raystudy.scoring import build_split, eval_scores
from raystudy.spec import TrialConfig
from raystudy.training.loop import train
from raystudy.trials.common import build_seeded

DATASET_OPTIONS: dict[str, dict[str, Any]] = {
    "dsprites": {"orientation_grid": "closed"},
    "shapes3d": {},
}

# The first and last value of each factor in the official files, which the authors' GT
# decoder reads (their sprites.py / shapes3d.py lat_values tables); raystudy's factor values
# are the same grids, but shape is a class index there and a value 1..3 in the dSprites file.
FILE_VALUES: dict[str, list[tuple[float, float]]] = {
    "dsprites": [(1.0, 3.0), (0.5, 1.0), (0.0, 2 * torch.pi), (0.0, 1.0), (0.0, 1.0)],
    "shapes3d": [(0.0, 0.9), (0.0, 0.9), (0.0, 0.9), (0.75, 1.25), (0.0, 3.0), (-30.0, 30.0)],
}

GT = {"objective": "gt_decoder", "architecture": "mlp"}
#: name -> (model, learning rate, decoder reads the file's values)
CANDIDATES: dict[str, tuple[dict[str, Any], float, bool]] = {
    "beta-VAE conv lr 1e-4": ({"objective": "beta_vae", "architecture": "conv"}, 1e-4, False),
    "GT mlp lr 1e-4": (GT, 1e-4, False),
    "GT mlp lr 1e-3": (GT, 1e-3, False),
    "GT mlp lr 1e-3 values": (GT, 1e-3, True),
    "GT mlp lr 1e-4 values": (GT, 1e-4, True),
    "GT conv lr 1e-4": ({"objective": "gt_decoder", "architecture": "conv"}, 1e-4, False),
    "GT conv lr 1e-3": ({"objective": "gt_decoder", "architecture": "conv"}, 1e-3, False),
}
EVAL_IMAGES = 500


class FileValues(nn.Module):
    """[0, 1] factors -> the official files' values, ``first + (last - first) * f``."""

    def __init__(self, ranges: list[tuple[float, float]]) -> None:
        super().__init__()
        first = torch.tensor([a for a, _ in ranges])
        self.register_buffer("first", first)
        self.register_buffer("span", torch.tensor([b for _, b in ranges]) - first)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        return self.first + self.span * f


def candidate_config(name: str, dataset: str, split: str) -> TrialConfig:
    model, lr, _ = CANDIDATES[name]
    return TrialConfig.model_validate(
        {
            "dataset": {"name": dataset, "options": DATASET_OPTIONS[dataset]},
            "split": split,
            "model": {**deepcopy(model), "latent_dim": 10, "beta": 1.0},
            "train": {"batch_size": 64, "lr": lr, "report_every": 100_000},
            "evaluation": {"metrics": [], "probes": [], "num_eval_images": EVAL_IMAGES},
            "seed": 0,
        }
    )


def run_candidate(args: tuple[str, str, str, list[int]]) -> dict[str, Any]:
    """Train one candidate to each mark in turn (resuming), scoring the NLLs at each."""
    name, dataset_name, split_name, marks = args
    torch.set_num_threads(1)
    config = candidate_config(name, dataset_name, split_name)
    device = torch.device("cpu")
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    model, objective = build_seeded(config, dataset, device)
    if CANDIDATES[name][2]:
        model.decoder = nn.Sequential(FileValues(FILE_VALUES[dataset_name]), model.decoder)
    state: dict[str, Any] | None = None

    def keep(step: int, row: dict[str, float] | None, s: dict[str, Any] | None) -> None:
        nonlocal state
        if s is not None:
            state = s

    points: list[dict[str, float]] = []
    cpu = wall = 0.0
    for mark in marks:
        c0, w0 = time.process_time(), time.perf_counter()
        train(
            model,
            objective,
            dataset,
            split,
            config.train.model_copy(update={"steps": mark}),
            seed=config.seed,
            device=device,
            on_progress=keep,
            resume_from=state,
        )
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        model.eval()
        scores = eval_scores(model, dataset, split, config.evaluation, device)
        model.train()
        point = {
            "steps": mark,
            "cpu_s": round(cpu, 1),
            "wall_s": round(wall, 1),
            "nll_train": scores[eval_key("recon")],
            "nll_heldout": scores[eval_key("recon", heldout=True)],
        }
        points.append(point)
        print(
            f"{name}: {mark} steps, NLL {point['nll_train']:.1f} seen, "
            f"{point['nll_heldout']:.1f} held out ({wall:.0f} s)",
            flush=True,
        )
    return {"name": name, "points": points}


def table(payload: dict[str, Any]) -> str:
    marks = payload["marks"]
    rows = [
        [
            c["name"],
            *(f"{p['nll_train']:.1f} / {p['nll_heldout']:.1f}" for p in c["points"]),
            f"{c['points'][-1]['wall_s']:.0f}",
        ]
        for c in payload["candidates"]
    ]
    headers = ["candidate", *(f"NLL seen / held out @{m}" for m in marks), "wall s"]
    return markdown(headers, rows)


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """One row per candidate for `python -m bench`: its NLLs at the last mark."""
    out = []
    for c in payload["candidates"]:
        last = c["points"][-1]
        out.append(
            (
                f"GT decoder ({payload['dataset']}, {payload['split']}): {c['name']}",
                f"NLL {last['nll_train']:.1f} seen, {last['nll_heldout']:.1f} held out "
                f"after {last['steps']} steps",
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=list(DATASET_OPTIONS), default="dsprites")
    parser.add_argument("--split", default="montero_element")
    parser.add_argument("--marks", type=int, nargs="+", default=[500, 1000, 2000, 3000])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    marks = sorted(args.marks)
    started = Load.now()
    print(f"{len(args.only)} candidates to {marks[-1]} steps, {args.jobs} at a time ({started})")
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        jobs = [(n, args.dataset, args.split, marks) for n in args.only]
        done = {r["name"]: r for r in pool.imap_unordered(run_candidate, jobs, chunksize=1)}
    payload = {
        "dataset": args.dataset,
        "split": args.split,
        "marks": marks,
        "candidates": [done[n] for n in args.only],
    }
    out = record("montero_gt_decoder", started, payload)
    print(table(out))
    write_json(args.json, out)


if __name__ == "__main__":
    main()
