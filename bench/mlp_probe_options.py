"""What a cheaper MLP probe would buy: the shipped probe against one batched float32 network.

    python -m bench.mlp_probe_options [--train 1000] [--test 500] [--rounds 3] [--json PATH]

The shipped ``mlp`` probe is Dittadi et al.'s (sklearn ``MLPRegressor((256, 256))`` per
factor, float64, early stopping) and the largest cost of a smoke or laptop trial outside
training (bench/RESULTS.md, "Trial cost"); its scores can only change if the probe does. This
measures the alternative a study would have to accept: the same networks (two hidden layers of
256 ReLU units per factor, Glorot-uniform start, Adam at 1e-3, minibatches of 200, L2 1e-4,
early stopping on a 10% validation split with patience 10 and tolerance 1e-4, at most 200
epochs, the best epoch's weights kept) trained together as one batched float32 torch model,
on one thread as a trial runs. Same inputs for both: codes of colour-dSprites' six factors
(a fixed random nonlinear mix of the normalised factors plus noise, 10 dimensions), a probe
training set of ``--train`` points, scored by R2 per factor on an in-distribution test set
and on one with scale values the training set never held (a transfer scenario's shift).

Reported: wall seconds per fit + predict (best of ``--rounds``), mean R2 of each, and the
largest per-factor R2 difference: what re-baselining on the cheaper probe would move.
Not a test: nothing here is shipped as a probe.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import r2_score
from threadpoolctl import threadpool_limits

from bench._table import Load, markdown, record, write_json
from raystudy.data import get_dataset
from raystudy.metrics.probes.mlp import MLPProbe

HIDDEN = 256
BATCH = 200
PATIENCE = 10
TOL = 1e-4
ALPHA = 1e-4


def synthetic_codes(
    n: int, sizes: list[int], shifted: int, low: bool, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, normalised factors); factor `shifted` takes only values below its middle one
    (`low`) or only those at or above it."""
    idx = np.stack([rng.integers(0, s, n) for s in sizes], axis=1)
    half = sizes[shifted] // 2
    idx[:, shifted] = rng.integers(0, half, n) if low else rng.integers(half, sizes[shifted], n)
    factors = idx / np.maximum(np.array(sizes) - 1, 1)
    mix = np.random.default_rng(12345).normal(size=(len(sizes), 10))
    codes = np.tanh(factors @ mix) + 0.05 * rng.normal(size=(n, 10))
    return codes, factors


class BatchedMLP(torch.nn.Module):
    """K independent (D -> 256 -> 256 -> 1) ReLU networks, one per factor, run as one."""

    def __init__(self, k: int, d: int, generator: torch.Generator) -> None:
        super().__init__()
        self.weights = torch.nn.ParameterList()
        self.biases = torch.nn.ParameterList()
        for fan_in, fan_out in ((d, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, 1)):
            bound = (6.0 / (fan_in + fan_out)) ** 0.5  # sklearn's start for ReLU networks
            w = (torch.rand(k, fan_in, fan_out, generator=generator) * 2 - 1) * bound
            b = (torch.rand(k, 1, fan_out, generator=generator) * 2 - 1) * bound
            self.weights.append(torch.nn.Parameter(w))
            self.biases.append(torch.nn.Parameter(b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (N, D) -> (N, K)
        h = x.unsqueeze(0).expand(len(self.weights[0]), -1, -1)
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b, h, w)
            if i < 2:
                h = torch.relu(h)
        return h.squeeze(-1).T


def fit_batched(x: np.ndarray, y: np.ndarray, seed: int = 0, max_epochs: int = 200) -> Any:
    """Train the K networks together; a factor whose early stopping ends leaves the batch (its
    best epoch's weights kept), so each trains as long as sklearn's own would."""
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    n_val = max(1, len(x) // 10)
    val, tr = order[:n_val], order[n_val:]
    xt = torch.as_tensor(x[tr], dtype=torch.float32)
    yt = torch.as_tensor(y[tr], dtype=torch.float32)
    xv, yv = torch.as_tensor(x[val], dtype=torch.float32), y[val]
    model = BatchedMLP(y.shape[1], x.shape[1], gen)
    kept = copy.deepcopy(model.state_dict())  # every factor's best epoch
    active = np.arange(y.shape[1])  # factors still training, rows of `model`
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    best = np.full(y.shape[1], -np.inf)
    stale = np.zeros(y.shape[1], dtype=int)
    for _ in range(max_epochs):
        perm = torch.randperm(len(xt), generator=gen)
        targets = yt[:, active]
        for start in range(0, len(xt), BATCH):
            rows = perm[start : start + BATCH]
            pred = model(xt[rows])
            l2 = sum((w**2).sum() for w in model.weights)
            loss = 0.5 * ((pred - targets[rows]) ** 2).mean(0).sum() + 0.5 * ALPHA * l2 / len(rows)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            pv = model(xv).numpy()
        scores = np.array([r2_score(yv[:, k], pv[:, i]) for i, k in enumerate(active)])
        better = scores > best[active] + TOL
        stale[active] = np.where(better, 0, stale[active] + 1)
        best[active] = np.maximum(best[active], scores)
        for key, value in model.state_dict().items():
            kept[key][active[better]] = value[torch.as_tensor(better)].detach().clone()
        going = stale[active] < PATIENCE
        if not going.any():
            break
        if not going.all():  # shrink the batch: parameters and Adam's moments alike
            rows_left = torch.as_tensor(np.flatnonzero(going))
            states = {}
            for plist in (model.weights, model.biases):
                for i, param in enumerate(plist):
                    state = opt.state[param]
                    plist[i] = torch.nn.Parameter(param.detach()[rows_left].clone())
                    states[plist[i]] = {
                        name: value[rows_left].clone() if value.dim() else value.clone()
                        for name, value in state.items()
                    }
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            for param, state in states.items():
                opt.state[param] = state
            active = active[going]
    model = BatchedMLP(y.shape[1], x.shape[1], gen)
    model.load_state_dict(kept)
    return model


def predict_batched(model: Any, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.as_tensor(x, dtype=torch.float32)).numpy().astype(np.float64)


def r2s(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    return np.array([r2_score(y[:, k], pred[:, k]) for k in range(y.shape[1])])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=1000, help="the smoke study's probe_train")
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    started = Load.now()
    factors = get_dataset("color_dsprites").factors
    sizes, scale = list(factors.sizes), factors.names.index("scale")
    rng = np.random.default_rng(0)
    x_tr, y_tr = synthetic_codes(args.train, sizes, scale, True, rng)
    x_id, y_id = synthetic_codes(args.test, sizes, scale, True, rng)
    x_ood, y_ood = synthetic_codes(args.test, sizes, scale, False, rng)
    rows, payload = [], {"train": args.train, "test": args.test, "factors": len(sizes)}
    for name in ("shipped", "batched_float32"):
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            with threadpool_limits(limits=1):
                if name == "shipped":
                    probe = MLPProbe(seed=0).fit(x_tr, y_tr)
                    p_id, p_ood = probe.predict(x_id), probe.predict(x_ood)
                else:
                    model = fit_batched(x_tr, y_tr)
                    p_id, p_ood = predict_batched(model, x_id), predict_batched(model, x_ood)
            times.append(time.perf_counter() - start)
        payload[name] = {
            "seconds": min(times),
            "r2_id": r2s(y_id, p_id).tolist(),
            "r2_ood": r2s(y_ood, p_ood).tolist(),
        }
    shipped, cheap = payload["shipped"], payload["batched_float32"]
    for name in ("shipped", "batched_float32"):
        p = payload[name]
        rows.append(
            (
                name,
                f"{p['seconds']:.2f}",
                f"{np.mean(p['r2_id']):.4f}",
                f"{np.mean(np.delete(p['r2_ood'], scale)):.4f}",
            )
        )
    payload["max_abs_r2_diff_id"] = float(
        np.max(np.abs(np.subtract(shipped["r2_id"], cheap["r2_id"])))
    )
    payload["max_abs_r2_diff_ood"] = float(
        np.max(np.abs(np.delete(np.subtract(shipped["r2_ood"], cheap["r2_ood"]), scale)))
    )
    print(
        markdown(
            ("probe", "fit + predict s", "mean R2 (test)", "mean R2 (shifted scale, others)"),
            rows,
        )
    )
    print(
        f"largest per-factor R2 difference: {payload['max_abs_r2_diff_id']:.4f} (test), "
        f"{payload['max_abs_r2_diff_ood']:.4f} (shifted)"
    )
    write_json(args.json, record("mlp_probe_options", started, payload))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    shipped, cheap = payload["shipped"], payload["batched_float32"]
    return [
        (
            f"mlp probe, {payload['factors']} factors x {payload['train']} points",
            f"{shipped['seconds']:.2f} s shipped, {cheap['seconds']:.2f} s batched float32 "
            f"(R2 moved up to {payload['max_abs_r2_diff_ood']:.3f})",
        )
    ]


if __name__ == "__main__":
    main()
