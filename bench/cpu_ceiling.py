"""How close a training step already runs to this core's arithmetic peak on CPU.

    python -m bench.cpu_ceiling [--threads 1] [--batch 32] [--rounds 5] [--json PATH]

Stacking S models (`seeds_per_trial`) keeps every model's convolutions; on a CPU it can only
pay if one model's step leaves the core's arithmetic units idle. This measures how idle, on
the smoke study's model (conv beta-VAE, 10 latents, colour-dSprites 64x64), same threads:

- matmul peak: GFLOP/s of a 2048 x 2048 x 2048 float32 matrix product, the best case for the
  core's vector units;
- per layer: GFLOP/s of each convolution of the model, forward and backward, at the step's
  batch and at 4x it (what a larger batch, or perfectly fused stacking, could reach);
- step: the training step through `raystudy.training.loop.train` at `--batch`, FLOPs counted by
  torch's FlopCounterMode (`model.flops_per_step`) over seconds per step.

Every time is the best of `--rounds` after a warm-up (this VM's speed wanders by tens of
percent between runs; the best case is the stable figure), so ratios compare best cases.

``matmul peak / step`` bounds what any rearrangement of the same arithmetic could gain per
model on this core. The tighter bound for stacking: its convolutions stay, each at best at the
faster of its two measured rates, and at best everything else (rendering, elementwise ops,
Adam, bookkeeping) costs nothing: ``stacking bound = step time / best convolution time``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from bench._table import Load, markdown, record, write_json
from bench.seeds_per_trial import smoke_config
from raystudy.data import get_dataset
from raystudy.models import build, model_cost
from raystudy.scoring import build_split
from raystudy.training.loop import train


def _best_seconds(fn: Any, rounds: int) -> float:
    fn()  # warm-up: allocations, oneDNN primitive creation
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_gflops(rounds: int, n: int = 2048) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / _best_seconds(lambda: a @ b, rounds) / 1e9


def layer_rows(model: nn.Module, batch: int, rounds: int) -> list[dict[str, Any]]:
    """Forward + backward GFLOP/s of every convolution at `batch` and `4 * batch`, on inputs
    of the shapes the layer sees in the model (recorded by one forward pass)."""
    shapes: dict[str, torch.Size] = {}

    def keep(name: str) -> Any:
        def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: Any) -> None:
            shapes[name] = inputs[0].shape

        return hook

    hooks = [
        m.register_forward_hook(keep(name))
        for name, m in model.named_modules()
        if isinstance(m, nn.Conv2d | nn.ConvTranspose2d)
    ]
    with torch.no_grad():
        model(torch.rand(1, 3, 64, 64))
    for h in hooks:
        h.remove()
    modules = dict(model.named_modules())
    rows = []
    first = next(iter(shapes))
    for name, shape in shapes.items():
        layer = modules[name]
        row: dict[str, Any] = {"layer": name, "kind": type(layer).__name__}
        for key, b in (("gflops", batch), ("gflops_4x", 4 * batch)):
            # The images need no gradient: the first layer's backward is its weights' only.
            x = torch.randn(b, *shape[1:], requires_grad=name != first)

            def step(layer: nn.Module = layer, x: torch.Tensor = x) -> None:
                layer(x).sum().backward()

            with FlopCounterMode(display=False) as counter:
                step()
            flops = counter.get_total_flops()
            row[key] = flops / _best_seconds(step, rounds) / 1e9
            if b == batch:
                row["gflop"] = flops / 1e9
        rows.append(row)
    return rows


def step_gflops(batch: int, steps: int, rounds: int) -> dict[str, float]:
    config = smoke_config(steps)
    config = config.model_copy(
        update={"train": config.train.model_copy(update={"batch_size": batch})}
    )
    dataset = get_dataset(config.dataset.name)
    split = build_split(config, dataset)
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    model, objective = build(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    flops = model_cost(
        model, objective, dataset.channels, dataset.resolution, dataset.factors.num_factors, batch
    )["model.flops_per_step"]
    seconds = []
    for r in range(rounds + 1):
        start = time.perf_counter()
        train(model, objective, dataset, split, config.train, seed=r, device=cpu)
        seconds.append((time.perf_counter() - start) / steps)
    per_step = min(seconds[1:])  # best case, as for the layers; the first round warms up
    return {"flops_per_step": flops, "s_per_step": per_step, "gflops": flops / per_step / 1e9}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32, help="the smoke study's batch")
    parser.add_argument("--steps", type=int, default=20, help="training steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = Load.now()
    peak = matmul_gflops(args.rounds)
    config = smoke_config()
    dataset = get_dataset(config.dataset.name)
    model, _ = build(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    layers = layer_rows(model, args.batch, args.rounds)
    step = step_gflops(args.batch, args.steps, args.rounds)
    conv_s = sum(r["gflop"] / r["gflops"] for r in layers)
    best_conv_s = sum(r["gflop"] / max(r["gflops"], r["gflops_4x"]) for r in layers)
    payload = {
        "threads": args.threads,
        "batch": args.batch,
        "matmul_gflops": peak,
        "layers": layers,
        "step": step,
        "ceiling": peak / step["gflops"],
        "conv_s": conv_s,
        "best_conv_s": best_conv_s,
        "stacking_bound": step["s_per_step"] / best_conv_s,
    }
    print(table(payload))
    write_json(args.json, record("cpu_ceiling", started, payload))


def table(payload: dict[str, Any]) -> str:
    b = payload["batch"]
    rows = [
        (r["layer"], r["kind"], f"{r['gflops']:.1f}", f"{r['gflops_4x']:.1f}")
        for r in payload["layers"]
    ]
    step = payload["step"]
    rows += [
        ("matmul 2048^3", "peak", f"{payload['matmul_gflops']:.1f}", ""),
        (
            f"training step ({step['flops_per_step'] / 1e9:.2f} GFLOP, "
            f"{1e3 * step['s_per_step']:.0f} ms)",
            "raystudy.training.loop",
            f"{step['gflops']:.1f}",
            "",
        ),
    ]
    out = markdown(["what", "kind", f"GFLOP/s at batch {b}", f"at batch {4 * b}"], rows)
    return out + (
        f"\n\nmatmul peak / training step = x{payload['ceiling']:.2f}; convolutions "
        f"{1e3 * payload['conv_s']:.0f} ms of the {1e3 * step['s_per_step']:.0f} ms step "
        f"({1e3 * payload['best_conv_s']:.0f} ms each at its faster batch): stacking bound "
        f"x{payload['stacking_bound']:.2f}"
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    step = payload["step"]
    return [
        (
            f"cpu ceiling: training step at batch {payload['batch']} ({payload['threads']} thread)",
            f"{step['gflops']:.1f} GFLOP/s of a {payload['matmul_gflops']:.1f} GFLOP/s matmul "
            f"peak (x{payload['ceiling']:.2f} headroom)",
        ),
        (
            "cpu ceiling: what stacking could gain at most",
            f"x{payload['stacking_bound']:.2f} (convolutions {1e3 * payload['conv_s']:.0f} of "
            f"{1e3 * step['s_per_step']:.0f} ms per step)",
        ),
    ]


if __name__ == "__main__":
    main()
