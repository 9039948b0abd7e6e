"""How many trials one GPU should hold: aggregate steps/s of 1, 2, 4, 8 trials sharing it.

    python -m bench.gpu_packing [--packing 1 2 4 8] [--steps 3000] [--json PATH]

Needs a CUDA GPU (it exits with a message saying so anywhere else). For each packing k, a Ray
Tune study of k trials asking for ``gpu: 1/k`` each (and one CPU), all at once, through
`raystudy.study.driver.run_study` as a user's study runs: the standard conv beta-VAE on
colour-dSprites rendered on the GPU, batch 64, `--steps` steps, a dry evaluation. Per packing:

- steps/s of each trial in its steady state (from its first to its last train/loss report
  in MLflow), and their sum: the aggregate throughput of the GPU;
- GPU utilisation (mean and max, %) and memory used (max, MiB; total and per process),
  sampled with `nvidia-smi` every 0.5 s while the study runs.

raystudy caps each trial's CUDA memory at its fraction of the GPU
(`torch.cuda.set_per_process_memory_fraction`), because Ray does not isolate GPU memory.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from bench._table import Load, markdown, record, write_json

ROOT = Path(__file__).resolve().parents[1]
TRIAL = [
    "model.objective=beta_vae",
    "train.batch_size=64",
    "train.input_noise=false",
    "train.grad_clip=null",
    "train.report_every=100",
    "evaluation.metrics=[]",
    "evaluation.probes=[]",
    "evaluation.num_eval_images=0",
]


class GpuSampler(threading.Thread):
    """Samples `nvidia-smi` (utilisation, memory; memory per process) until stopped."""

    def __init__(self, period_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.period_s = period_s
        self.util: list[float] = []
        self.memory: list[float] = []
        self.process_memory: list[float] = []
        self._halt = threading.Event()

    def _query(self, *args: str) -> list[list[float]]:
        out = subprocess.run(
            ["nvidia-smi", *args, "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [[float(v) for v in line.split(",")] for line in out.strip().splitlines() if line]

    def run(self) -> None:
        while not self._halt.wait(self.period_s):
            (util, mem), *_ = self._query("--query-gpu=utilization.gpu,memory.used")
            self.util.append(util)
            self.memory.append(mem)
            apps = self._query("--query-compute-apps=pid,used_memory")
            self.process_memory.extend(m for _, m in apps)

    def stop(self) -> dict[str, float]:
        self._halt.set()
        self.join()
        busy = self.util or [0.0]
        return {
            "gpu_util_mean": statistics.fmean(busy),
            "gpu_util_max": max(busy),
            "gpu_mem_max_mib": max(self.memory or [0.0]),
            "gpu_mem_per_process_max_mib": max(self.process_memory or [0.0]),
        }


def steady_rates(uri: str, experiment_id: str) -> list[float]:
    """Steps/s of every trial run between its first and its last train/loss report."""
    from mlflow.tracking import MlflowClient

    from raystudy.tags import TRIAL_RUNS

    client = MlflowClient(uri)
    runs = client.search_runs([experiment_id], filter_string=TRIAL_RUNS)
    rates = []
    for run in runs:
        history = sorted(
            (m.step, m.timestamp) for m in client.get_metric_history(run.info.run_id, "train/loss")
        )
        (s0, t0), (s1, t1) = history[0], history[-1]
        if t1 > t0:
            rates.append((s1 - s0) / ((t1 - t0) / 1e3))
    return rates


def measure(k: int, steps: int, folder: Path) -> dict[str, Any]:
    from raystudy.checks import load_spec
    from raystudy.study.driver import run_study

    spec = load_spec(
        ROOT / "search_spaces/smoke.yaml",
        [
            f"name=packing{k}",
            *TRIAL,
            f"train.steps={steps}",
            f"grid={{seed: {list(range(k))}}}",
            f"resources={{cpu: 1, gpu: {1.0 / k}}}",
            f"execution.max_concurrent_trials={k}",
        ],
    )
    sampler = GpuSampler()
    sampler.start()
    outcome = run_study(spec, output=folder, verbose=0)
    gpu = sampler.stop()
    if not outcome.ok:
        raise SystemExit(f"packing {k}: the study did not finish: {outcome.states}")
    rates = steady_rates(outcome.info.tracking_uri, outcome.info.experiment_id)
    return {
        "trials": k,
        "gpu_per_trial": 1.0 / k,
        "steps_per_s_per_trial": statistics.median(rates),
        "steps_per_s_total": sum(rates),
        "wall_s": outcome.wall_s,
        **gpu,
    }


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["steps_per_s_total"]
    return markdown(
        [
            "trials",
            "gpu each",
            "steps/s per trial",
            "steps/s total",
            "vs 1 trial",
            "GPU util mean / max %",
            "GPU mem max MiB (per process)",
        ],
        [
            (
                r["trials"],
                f"{r['gpu_per_trial']:g}",
                f"{r['steps_per_s_per_trial']:.1f}",
                f"{r['steps_per_s_total']:.1f}",
                f"x{r['steps_per_s_total'] / base:.2f}",
                f"{r['gpu_util_mean']:.0f} / {r['gpu_util_max']:.0f}",
                f"{r['gpu_mem_max_mib']:.0f} ({r['gpu_mem_per_process_max_mib']:.0f})",
            )
            for r in rows
        ],
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"gpu packing, {r['trials']} trial(s) x gpu {r['gpu_per_trial']:g}",
            f"{r['steps_per_s_total']:.1f} steps/s total, util {r['gpu_util_mean']:.0f}%",
        )
        for r in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packing", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--steps", type=int, default=3000, help="training steps per trial")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        sys.exit(
            f"gpu_packing needs a CUDA GPU; this machine has none that torch can use "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False). "
            "Run it on a GPU node: python -m bench.gpu_packing --json packing.json"
        )
    started = Load.now()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.packing:
            rows.append(measure(k, args.steps, Path(tmp)))
            print(rows[-1], flush=True)
    print(table(rows))
    print(f"\n{torch.cuda.get_device_name(0)}; started with {started}; ended with {Load.now()}")
    write_json(args.json, record("gpu_packing", started, {"steps": args.steps, "rows": rows}))


if __name__ == "__main__":
    main()
