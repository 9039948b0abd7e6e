"""Steps/s of raystudy's training loop against a bare PyTorch loop of the same model.

    python -m bench.train_step [--threads 1 2] [--rounds 12] [--steps 5] [--compile] [--json PATH]

The standard conv beta-VAE (disentanglement_lib's architecture, 10 latents, beta 1, batch
64, Adam lr 1e-4: `TrainConfig`'s defaults), per case (dataset, split, input noise) and torch
thread count, in one process:

- raystudy: ``raystudy.training.loop.train``, one call of `--steps` + 1 steps per round, continuing
  the same model from round to round, timed from the end of its first step to its end
  (`steady_seconds_per_step`). Each step samples factor indices inside the split's encoder
  set, renders them, adds the input noise when the case asks for it, runs the objective,
  backward and Adam, and keeps the train/* means; each round ends with a report (a study
  reports every 50 steps: this counts more bookkeeping, not less).
- bare: a copy of the same weights, a plain loop over pre-rendered batches with the loss
  written inline (Bernoulli NLL summed over pixels + KL, means over the batch), backward,
  Adam, `--steps` steps per round. Before timing, both losses are checked equal on one batch.
- channels-last: raystudy's loop again, training in the channels-last layout
  (``train(..., memory_format=torch.channels_last)``, see `preferred_memory_format`);
- with `--compile`: the bare loop with the encoder and decoder under `torch.compile`
  (default inductor backend); its first round, compilation included, is reported apart.

The variants alternate round by round (`bench._table.interleaved`); each figure is the median
of the per-round ratios variant s/step / bare s/step, so an overhead of 1.03 means the loop
costs 3% on top of the model, and 0.90 for channels-last means 10% less time per step than
the bare NCHW loop. "fastest rounds" is the fastest raystudy round over the fastest bare
round: where other jobs take the cores in bursts (two threads suffer most), the rounds they
spare are the comparable ones. "batch ms" is one `BatchSampler` call alone (sample + render +
noise), the part of the overhead that is the data. Report `uptime` with the figures.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from bench._table import (
    Load,
    interleaved,
    markdown,
    median_ratio,
    quartiles,
    record,
    timed,
    write_json,
)
from raystudy.data import GroundTruthDataset, Split, get_dataset, get_split
from raystudy.models import build_model, get_objective
from raystudy.models.objectives import Batch, Objective
from raystudy.spec import TrainConfig
from raystudy.training.loop import BatchSampler, train

#: (dataset, split, input noise): the two datasets of the shipped studies, noise on and off.
CASES = (
    ("dsprites", "iid", False),
    ("color_dsprites", "dittadi_hues", False),
    ("color_dsprites", "dittadi_hues", True),
)
POOL = 8  # pre-rendered batches the bare loop cycles through


@dataclass(frozen=True)
class Row:
    dataset: str
    split: str
    noise: bool
    threads: int
    raystudy_steps_per_s: float  # medians over rounds
    bare_steps_per_s: float
    overhead: float  # median over rounds of raystudy s/step / bare s/step
    overhead_q1: float
    overhead_q3: float
    batch_ms: float  # one BatchSampler call (sample, render, noise), median
    best_overhead: float  # fastest raystudy round / fastest bare round
    channels_last: float  # median over rounds of raystudy channels-last s/step / bare s/step
    compiled: float | None = None  # the same for the bare loop under torch.compile
    compile_s: float | None = None  # its first round, compilation included
    rounds_s_per_step: dict[str, list[float]] | None = None  # every round, per variant


def bare_loss(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """beta-VAE loss (beta 1) written out: per-image Bernoulli NLL summed over pixels plus the
    KL of the diagonal Gaussian posterior to N(0, I), both averaged over the batch."""
    logits, mu, logvar = model(x)
    recon = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
    kl = 0.5 * (mu.pow(2) + logvar.exp() - logvar - 1.0).sum(dim=1).mean()
    return recon + kl


def steady_seconds_per_step(
    model: torch.nn.Module,
    objective: Objective,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    memory_format: torch.memory_format = torch.contiguous_format,
) -> float:
    """Seconds per step of one `train` call of `config.steps` = S + 1 steps, in its steady
    state: from the end of the first step to the end of the call, i.e. S whole steps (each
    sampling, rendering, noising, forward, backward, Adam, bookkeeping) and one report. The
    end of a step is the objective's `auxiliary_step`, which the loop calls last in every step;
    the loop's set-up and the first step's allocations are left out, as Lightning's set-up is
    in `bench.peer`."""
    started: list[float] = []
    ended: list[float] = []
    own = objective.auxiliary_step

    def stamp(terms: Any) -> None:
        own(terms)
        if not started:
            started.append(time.perf_counter())

    objective.auxiliary_step = stamp  # type: ignore[method-assign]
    try:
        train(
            model,
            objective,
            dataset,
            split,
            config,
            seed=0,
            device=torch.device("cpu"),
            on_progress=lambda *_: ended.append(time.perf_counter()),
            memory_format=memory_format,
        )
    finally:
        del objective.auxiliary_step  # the class's method again
    return (ended[-1] - started[0]) / (config.steps - 1)


def measure_case(
    dataset_name: str,
    split_name: str,
    noise: bool,
    threads: int,
    rounds: int,
    steps: int,
    compile_: bool = False,
) -> Row:
    torch.set_num_threads(threads)
    dataset = get_dataset(dataset_name)
    split = get_split(split_name, dataset)
    device = torch.device("cpu")
    # One report per round: S + 1 steps, of which the first is not timed.
    config = TrainConfig(steps=steps + 1, report_every=steps + 1, input_noise=noise)
    objective = get_objective("beta_vae", beta=1.0)
    torch.manual_seed(0)
    ours = build_model("conv", dataset.channels, 10)
    nhwc = copy.deepcopy(ours)
    bare = copy.deepcopy(ours)

    rng = np.random.default_rng(0)
    pool = [
        dataset.render(torch.from_numpy(split.sample("encoder", config.batch_size, rng)))
        for _ in range(POOL)
    ]
    _check_same_loss(ours, bare, objective, pool[0])

    def raystudy_round(model: torch.nn.Module, layout: torch.memory_format) -> float:
        return steady_seconds_per_step(model, objective, dataset, split, config, layout)

    def bare_rounds(model: torch.nn.Module) -> Callable[[], float]:
        optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        model.train()

        def run() -> None:
            for i in range(steps):
                optimiser.zero_grad(set_to_none=True)
                bare_loss(model, pool[i % POOL]).backward()
                optimiser.step()

        return lambda: timed(run) / steps

    variants = {
        "raystudy": lambda: raystudy_round(ours, torch.contiguous_format),
        "bare": bare_rounds(bare),
        "channels_last": lambda: raystudy_round(nhwc, torch.channels_last),
    }
    compile_s = None
    if compile_:
        compiled = copy.deepcopy(bare)
        compiled.encoder.compile()
        compiled.decoder.compile()
        variants["compiled"] = bare_rounds(compiled)
        compile_s = variants["compiled"]() * steps  # the first round compiles
    per_step = interleaved(variants, rounds)
    sampler = BatchSampler(
        dataset, split, config.batch_size, None, noise, device, np.random.default_rng(1)
    )
    batch_s = statistics.median(timed(sampler) for _ in range(3 * rounds))
    ratios = [a / b for a, b in zip(per_step["raystudy"], per_step["bare"], strict=True)]
    q1, q3 = quartiles(ratios)
    return Row(
        dataset_name,
        split_name,
        noise,
        threads,
        1.0 / statistics.median(per_step["raystudy"]),
        1.0 / statistics.median(per_step["bare"]),
        median_ratio(per_step["raystudy"], per_step["bare"]),
        q1,
        q3,
        1e3 * batch_s,
        min(per_step["raystudy"]) / min(per_step["bare"]),
        median_ratio(per_step["channels_last"], per_step["bare"]),
        median_ratio(per_step["compiled"], per_step["bare"]) if compile_ else None,
        compile_s,
        per_step,
    )


def _check_same_loss(
    ours: torch.nn.Module, bare: torch.nn.Module, objective: Callable[..., Any], x: torch.Tensor
) -> None:
    """The two loops must optimise the same thing, or their ratio says nothing: same weights,
    same posterior sample (same seed), same loss."""
    torch.manual_seed(123)
    theirs = objective(ours, Batch(x, x)).loss
    torch.manual_seed(123)
    mine = bare_loss(bare, x)
    if not torch.allclose(theirs, mine, rtol=1e-5):
        raise AssertionError(f"bare loss {mine.item()} != beta_vae loss {theirs.item()}")


def table(rows: list[Row]) -> str:
    return markdown(
        [
            "dataset",
            "split",
            "noise",
            "threads",
            "raystudy steps/s",
            "bare steps/s",
            "overhead (median, IQR)",
            "fastest rounds",
            "batch ms",
            "channels-last / bare",
            "compiled bare / bare (compile s)",
        ],
        [
            (
                r.dataset,
                r.split,
                "on" if r.noise else "off",
                r.threads,
                f"{r.raystudy_steps_per_s:.2f}",
                f"{r.bare_steps_per_s:.2f}",
                f"{r.overhead:.3f} ({r.overhead_q1:.3f}-{r.overhead_q3:.3f})",
                f"{r.best_overhead:.3f}",
                f"{r.batch_ms:.1f}",
                f"{r.channels_last:.3f}",
                "" if r.compiled is None else f"{r.compiled:.3f} ({r.compile_s:.0f})",
            )
            for r in rows
        ],
        right=3,
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""

    def compiled(r: dict[str, Any]) -> str:
        if r.get("compiled") is None:
            return ""
        return f", compiled x{r['compiled']:.3f} after {r['compile_s']:.0f} s"

    return [
        (
            f"train step {r['dataset']}{' +noise' if r['noise'] else ''}, {r['threads']} thr",
            f"{r['raystudy_steps_per_s']:.2f} steps/s, x{r['overhead']:.3f} vs bare loop "
            f"(channels-last x{r['channels_last']:.3f}{compiled(r)})",
        )
        for r in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=12, help="timed rounds per variant")
    parser.add_argument("--steps", type=int, default=5, help="training steps per round")
    parser.add_argument("--cases", type=int, nargs="+", help=f"indices into {CASES}")
    parser.add_argument("--compile", action="store_true", help="also time a compiled bare loop")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    cases = [CASES[i] for i in args.cases] if args.cases else list(CASES)
    rows = []
    for threads in args.threads:
        for name, split, noise in cases:
            row = measure_case(name, split, noise, threads, args.rounds, args.steps, args.compile)
            print(f"{row}  [{Load.now()}]", flush=True)
            rows.append(row)
    print(table(rows))
    print(f"\nstarted with {started}; ended with {Load.now()}")
    settings = {"rounds": args.rounds, "steps": args.steps, "batch": 64, "latents": 10}
    write_json(
        args.json, record("train_step", started, {**settings, "rows": [asdict(r) for r in rows]})
    )


if __name__ == "__main__":
    main()
