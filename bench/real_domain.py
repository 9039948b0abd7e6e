"""The ``real`` domain's render cost, this tree's against another commit's, and its figure.

    python -m bench.real_domain [--ref main] [--images 1000] [--reps 5] [--json out.json]
    python -m bench.real_domain --figure docs/img/real_domain_before_after.png

Timing: images per second of ``render(idx, domain="real")`` (the sim render included, as
training pays it) for ``--images`` feasible combinations at 64 px, one torch thread, median of
``--reps`` calls after one untimed call, for colour_dsprites and shapes3d; "before" swaps in
the ``RealShift`` of ``raystudy/data/domains/real.py`` at ``--ref`` (``git show``), "after" is
this tree's. Both run in the same process, alternating, so the machine's load hits them alike.

Figure: rows colour_dsprites, shapes3d, finger (8 images each, 64 px); columns sim, real at
``--ref``, real now.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from raystudy.data import get_dataset
from raystudy.data.sources.procedural.dataset import ProceduralDataset

TIMED = ("color_dsprites", "shapes3d")
FIGURE = ("color_dsprites", "shapes3d", "finger")


def module_at(ref: str) -> ModuleType:
    """``raystudy.data.domains.real`` as it is at git ``ref``, loaded under another name."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", f"{ref}:raystudy/data/domains/real.py"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "real_domain_ref.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("real_domain_ref", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def with_shift(name: str, old: ModuleType | None) -> ProceduralDataset:
    """A fresh dataset whose ``real`` domain is the old module's shift, or this tree's."""
    ds = get_dataset(name)
    assert isinstance(ds, ProceduralDataset)
    if old is not None:
        ds.__dict__.setdefault("_shifts", {})["real"] = old.RealShift(
            ds.channels, ds.resolution, ds.real_seed
        )
    return ds


def images_per_s(ds: ProceduralDataset, idx: torch.Tensor, reps: int) -> float:
    ds.render(idx, domain="real")  # tables, workspace
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        ds.render(idx, domain="real")
        times.append(time.perf_counter() - start)
    return len(idx) / statistics.median(times)


def measure(ref: str, images: int, reps: int) -> list[dict[str, Any]]:
    torch.set_num_threads(1)
    old = module_at(ref)
    rows = []
    for name in TIMED:
        before, after = with_shift(name, old), with_shift(name, None)
        idx = torch.from_numpy(before.factors.sample(images, np.random.default_rng(0)))
        sim = with_shift(name, None)
        sim.render(idx)
        start = time.perf_counter()
        sim.render(idx)
        sim_rate = images / (time.perf_counter() - start)
        # Alternate the two, a rep at a time, so drifting load hits both.
        b: list[float] = []
        a: list[float] = []
        for _ in range(reps):
            b.append(images_per_s(before, idx, 1))
            a.append(images_per_s(after, idx, 1))
        rb, ra = statistics.median(b), statistics.median(a)
        rows.append(
            {
                "dataset": name,
                "sim_images_per_s": sim_rate,
                "before_images_per_s": rb,
                "after_images_per_s": ra,
                "slowdown": rb / ra,
            }
        )
    return rows


def figure(ref: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    old = module_at(ref)
    fig, axes = plt.subplots(len(FIGURE), 3, figsize=(13, 2.3 * len(FIGURE)), squeeze=False)
    for row, name in enumerate(FIGURE):
        before, after = with_shift(name, old), with_shift(name, None)
        idx = torch.from_numpy(after.factors.sample(8, np.random.default_rng(2)))
        panels = (
            ("sim", after.render(idx)),
            (f"real at {ref}", before.render(idx, domain="real")),
            ("real now", after.render(idx, domain="real")),
        )
        for col, (title, images) in enumerate(panels):
            # A 2 x 4 tile of the 8 images (rows of 4 side by side, stacked).
            hwc = images.permute(0, 2, 3, 1)
            strip = torch.cat([torch.cat(list(hwc[i : i + 4]), dim=1) for i in (0, 4)]).numpy()
            ax = axes[row][col]
            ax.imshow(strip.squeeze(-1) if strip.shape[-1] == 1 else strip, cmap="gray")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(title)
            if col == 0:
                ax.set_ylabel(name)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"real domain {r['dataset']}, {payload['images']} images, 1 thr",
            f"{r['before_images_per_s']:,.0f} -> {r['after_images_per_s']:,.0f} images/s "
            f"({r['slowdown']:.2f}x slower)",
        )
        for r in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git ref of the 'before' real domain")
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5, help="timed calls per side")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--figure", type=Path, default=None, help="write the figure instead")
    args = parser.parse_args(argv)
    if args.figure:
        figure(args.ref, args.figure)
        return
    load_start = os.getloadavg()
    rows = measure(args.ref, args.images, args.reps)
    load_end = os.getloadavg()
    for r in rows:
        print(
            f"{r['dataset']:>15}: sim {r['sim_images_per_s']:,.0f}/s, real before "
            f"{r['before_images_per_s']:,.0f}/s, after {r['after_images_per_s']:,.0f}/s "
            f"({r['slowdown']:.2f}x slower)"
        )
    print(f"load {load_start[0]:.2f} -> {load_end[0]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        payload = {
            "bench": "real_domain",
            "date": date.today().isoformat(),
            "ref": args.ref,
            "images": args.images,
            "threads": 1,
            "load_start": {"one": load_start[0]},
            "load_end": {"one": load_end[0]},
            "cpus": os.cpu_count(),
            "rows": rows,
        }
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
