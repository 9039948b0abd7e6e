"""Rendering throughput per dataset and domain, and its cost relative to a training step.

    python bench/render.py [--threads 1 2] [--reps 10] [--json out.json] [--quick]
                           [--datasets NAME ...]

For each dataset and domain: the median (and minimum) wall time of ``render`` on a fresh batch
of 256 feasible factor combinations at 64x64 (indices drawn beforehand, not timed), as
images/s. For reference, the median time of one training step of the standard conv VAE at the
same batch size and channel count (``build_model("conv", channels, 10)``, ``beta_vae``, Adam;
a step is forward, backward and the optimiser update), timed between the render cells, and the
ratio render / step, which the data layer promises to keep under 10%. File datasets are timed
on small temporary files in the official formats (so they are in the page cache: the lookup
and conversion, not the disk).

Every measurement runs at each ``--threads`` setting (``torch.set_num_threads``). Timings on a
shared machine vary with its load: report ``uptime`` with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split, get_dataset
from raystudy.models import build_model, get_objective
from raystudy.models.objectives import Batch

BATCH = 256
PROCEDURAL = ("dsprites", "color_dsprites", "shapes3d", "finger", "mpi3d")
FILES = ("dsprites_file", "shapes3d_file", "mpi3d_file")
MPI_SIZES = (2, 2, 2, 2, 2, 8, 8)


@dataclass(frozen=True)
class Row:
    dataset: str
    domain: str
    threads: int
    render_ms: float  # median
    render_min_ms: float
    images_per_s: float  # from the median
    step_ms: float  # median of the steps timed between the cells of this thread count
    render_over_step: float  # median render / median step


def timed(fn: Callable[[], object], reps: int, warmup: int = 2) -> list[float]:
    """Wall times of ``fn()`` over ``reps`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def render_times(ds: GroundTruthDataset, domain: str, reps: int) -> list[float]:
    """Times to render one batch, each call on a different batch of indices."""
    drawn = Split("bench", None, [], ds).sample("encoder", BATCH * (reps + 2), 0)
    batches = iter([torch.from_numpy(b) for b in np.split(drawn, reps + 2)])
    return timed(lambda: ds.render(next(batches), domain=domain), reps)


class Stepper:
    """One beta-VAE training step of the conv architecture at batch 256 (forward, backward,
    Adam update), per channel count; built once, timed on demand."""

    def __init__(self, channels: int) -> None:
        torch.manual_seed(0)
        self.model = build_model("conv", channels, 10)
        self.objective = get_objective("beta_vae")
        self.optimiser = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        self.x = torch.rand(BATCH, channels, 64, 64)
        self.step()  # warm-up: first-call allocations and kernel selection

    def step(self) -> None:
        self.optimiser.zero_grad(set_to_none=True)
        self.objective(self.model, Batch(self.x, self.x)).loss.backward()
        self.optimiser.step()

    def time(self) -> float:
        start = time.perf_counter()
        self.step()
        return time.perf_counter() - start


def file_datasets(folder: Path) -> dict[str, GroundTruthDataset]:
    """Small files in the official formats (4096 / 2048 images), and their datasets."""
    import h5py

    rng = np.random.default_rng(0)
    n = 4096
    flat = rng.choice(3 * 6 * 40 * 32 * 32, n, replace=False)
    classes = np.stack(np.unravel_index(flat, (3, 6, 40, 32, 32)), 1)
    np.savez(
        folder / "dsprites.npz",
        imgs=rng.integers(0, 2, (n, 64, 64), dtype=np.uint8),
        latents_classes=np.concatenate([np.zeros((n, 1), np.int64), classes], 1),
        latents_values=np.zeros((n, 6)),
    )
    shapes = get_dataset("shapes3d").factors
    flat = rng.choice(shapes.total, n, replace=False)
    idx = np.stack(np.unravel_index(flat, shapes.sizes), 1)
    labels = np.stack([np.asarray(f.values)[idx[:, k]] for k, f in enumerate(shapes.factors)], 1)
    with h5py.File(folder / "3dshapes.h5", "w") as f:
        f.create_dataset("images", data=rng.integers(0, 256, (n, 64, 64, 3), dtype=np.uint8))
        f.create_dataset("labels", data=labels)
    rows = int(np.prod(MPI_SIZES))
    for name in ("toy", "real"):
        images = rng.integers(0, 256, (rows, 64, 64, 3), dtype=np.uint8)
        np.savez(folder / f"mpi3d_{name}.npz", images=images)
    return {
        "dsprites_file": get_dataset("dsprites_file", path=str(folder / "dsprites.npz")),
        "shapes3d_file": get_dataset("shapes3d_file", path=str(folder / "3dshapes.h5")),
        "mpi3d_file": get_dataset(
            "mpi3d_file",
            path=str(folder / "mpi3d_toy.npz"),
            real_path=str(folder / "mpi3d_real.npz"),
            factor_sizes=list(MPI_SIZES),
        ),
    }


def measure(datasets: dict[str, GroundTruthDataset], threads: list[int], reps: int) -> list[Row]:
    """Every (dataset, domain) cell at every thread count. On a shared machine the load
    drifts, so training steps are timed between the cells (two before each) rather than all
    at once, and each ratio uses the median of the steps of its thread count."""
    rows = []
    for t in threads:
        torch.set_num_threads(t)
        steppers = {c: Stepper(c) for c in (1, 3)}
        cells = []
        step_times: dict[int, list[float]] = {1: [], 3: []}
        for name, ds in datasets.items():
            for domain in ds.domains:
                for _ in range(2):
                    step_times[ds.channels].append(steppers[ds.channels].time())
                cells.append((name, domain, ds.channels, render_times(ds, domain, reps)))
        steps = {c: statistics.median(v) for c, v in step_times.items() if v}
        for name, domain, channels, times in cells:
            seconds = statistics.median(times)
            rows.append(
                Row(
                    name,
                    domain,
                    t,
                    1e3 * seconds,
                    1e3 * min(times),
                    BATCH / seconds,
                    1e3 * steps[channels],
                    seconds / steps[channels],
                )
            )
    return rows


def format_table(rows: list[Row]) -> str:
    head = (
        "| dataset | domain | threads | ms / batch (median) | min | images / s | "
        "VAE step ms | render / step |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r.dataset} | {r.domain} | {r.threads} | {r.render_ms:.1f} | "
            f"{r.render_min_ms:.1f} | {r.images_per_s:,.0f} | {r.step_ms:.0f} | "
            f"{100 * r.render_over_step:.1f}% |"
        )
    return "\n".join(lines)


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"render {r['dataset']} {r['domain']}, batch {payload['batch']}, {r['threads']} thr",
            f"{r['images_per_s']:,.0f} images/s, {100 * r['render_over_step']:.1f}% of a step",
        )
        for r in payload["rows"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=10, help="timed render batches per cell")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--quick", action="store_true", help="3 reps (a smoke run)")
    parser.add_argument("--no-files", action="store_true", help="procedural datasets only")
    parser.add_argument(
        "--datasets", nargs="+", choices=PROCEDURAL + FILES, help="only these (default: all)"
    )
    args = parser.parse_args()
    reps = 3 if args.quick else args.reps
    wanted = set(args.datasets or PROCEDURAL + FILES)
    datasets: dict[str, GroundTruthDataset] = {
        name: get_dataset(name) for name in PROCEDURAL if name in wanted
    }
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_files and wanted & set(FILES):
            files = file_datasets(Path(tmp))
            datasets.update({name: ds for name, ds in files.items() if name in wanted})
        rows = measure(datasets, args.threads, reps)
    load = os.getloadavg()
    print(format_table(rows))
    print(
        f"\nbatch {BATCH}, 64x64, {reps} timed batches per cell (median); "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    worst = max(rows, key=lambda r: r.render_over_step)
    print(
        f"largest render / step: {100 * worst.render_over_step:.1f}% "
        f"({worst.dataset}, {worst.domain}, {worst.threads} thread(s))"
    )
    if args.json:
        payload = {
            "bench": "render",
            "batch": BATCH,
            "reps": reps,
            "load_average": load,
            "cpus": os.cpu_count(),
            "rows": [asdict(r) for r in rows],
        }
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
