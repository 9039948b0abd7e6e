"""Two trials of one thread each, or one trial of two threads: which uses 2 cores better?

    python -m bench.cpu_share [--seconds 20] [--rounds 3] [--json PATH]

raystudy gives each trial as many torch threads as it asks for CPUs (`resources.cpu`, see
`raystudy.trials.single.run_trial`), so that Ray's packing of trials onto cores is also how threads
land on cores: concurrent trials never ask for more threads than there are cores. This
measures the choice on this machine with the training step of a study (conv beta-VAE,
colour-dSprites rendered per step, batch 64, Adam), each configuration as separate worker
processes that train for the same `--seconds` window, started together:

- ``1 x 2 threads``: one trial with 2 threads;
- ``2 x 1 thread``: two trials with 1 thread each, placed by the OS (as Ray leaves them);
- ``2 x 1 thread, pinned``: the same, each pinned to its own core (`taskset`);
- ``2 x 2 threads``: two trials with 2 threads each: the oversubscription capping prevents.

The figure is the steps/s summed over a configuration's workers (models trained per second
on the machine), median over `--rounds`; configurations alternate within each round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._table import Load, markdown, median_ratio, record, write_json

ROOT = Path(__file__).resolve().parents[1]

#: name -> (processes, threads per process, pinned)
CONFIGS = {
    "1 x 2 threads": (1, 2, False),
    "2 x 1 thread": (2, 1, False),
    "2 x 1 thread, pinned": (2, 1, True),
    "2 x 2 threads": (2, 2, False),
}


def worker(threads: int, start_at: float, seconds: float) -> None:
    """Train from `start_at` (epoch s) for `seconds`; print the steps/s as JSON."""
    import numpy as np
    import torch

    from raystudy.data import get_dataset, get_split
    from raystudy.models import build_model, get_objective
    from raystudy.training.loop import BatchSampler

    torch.set_num_threads(threads)
    dataset = get_dataset("color_dsprites")
    split = get_split("dittadi_hues", dataset)
    torch.manual_seed(0)
    model = build_model("conv", dataset.channels, 10)
    objective = get_objective("beta_vae")
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)
    cpu = torch.device("cpu")
    sampler = BatchSampler(dataset, split, 64, None, False, cpu, np.random.default_rng(0))

    def step() -> None:
        optimiser.zero_grad(set_to_none=True)
        objective(model, sampler()).loss.backward()
        optimiser.step()

    step()  # first-call allocations, before the window
    time.sleep(max(0.0, start_at - time.time()))
    steps, begin = 0, time.perf_counter()
    while time.perf_counter() - begin < seconds:
        step()
        steps += 1
    print(json.dumps({"steps_per_s": steps / (time.perf_counter() - begin)}))


def run_config(processes: int, threads: int, pinned: bool, seconds: float) -> float:
    """Aggregate steps/s of `processes` workers training over the same window."""
    start_at = time.time() + 15.0  # leaves every worker time to import and build its model
    procs = []
    for i in range(processes):
        cmd = [sys.executable, "-m", "bench.cpu_share", "--worker", str(threads)]
        cmd += ["--start-at", str(start_at), "--seconds", str(seconds)]
        if pinned:
            cmd = ["taskset", "-c", str(i % (os.cpu_count() or 1)), *cmd]
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT))
    rates = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"worker failed with exit code {proc.returncode}")
        rates.append(json.loads(out.strip().splitlines()[-1])["steps_per_s"])
    return sum(rates)


def table(rows: list[dict[str, Any]]) -> str:
    return markdown(
        ["configuration", "steps/s total (median)", "min - max", "vs 1 x 2 threads"],
        [
            (
                r["config"],
                f"{r['steps_per_s']:.2f}",
                f"{r['min']:.2f} - {r['max']:.2f}",
                f"x{r['vs_one_trial']:.2f}",
            )
            for r in rows
        ],
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"cpu share: {r['config']}",
            f"{r['steps_per_s']:.2f} steps/s total, x{r['vs_one_trial']:.2f} of 1 x 2 threads",
        )
        for r in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="timed window per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.start_at, args.seconds)
        return
    configs = dict(CONFIGS)
    if shutil.which("taskset") is None:
        print("taskset not found: the pinned configuration is skipped")
        del configs["2 x 1 thread, pinned"]
    started = Load.now()
    figures: dict[str, list[float]] = {name: [] for name in configs}
    for r in range(args.rounds):
        for name in list(configs) if r % 2 == 0 else list(reversed(configs)):
            figures[name].append(run_config(*configs[name], args.seconds))
            print(f"round {r}: {name}: {figures[name][-1]:.2f} steps/s [{Load.now()}]", flush=True)
    rows = [
        {
            "config": name,
            "steps_per_s": statistics.median(v),
            "min": min(v),
            "max": max(v),
            "vs_one_trial": median_ratio(v, figures["1 x 2 threads"]),
            "runs": v,
        }
        for name, v in figures.items()
    ]
    print(table(rows))
    print(f"\nstarted with {started}; ended with {Load.now()}")
    payload = {"seconds": args.seconds, "rounds": args.rounds, "rows": rows}
    write_json(args.json, record("cpu_share", started, payload))


if __name__ == "__main__":
    main()
