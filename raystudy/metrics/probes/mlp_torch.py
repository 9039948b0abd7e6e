"""``mlp_torch``: Dittadi et al.'s MLP probe (``mlp_sklearn``) as one batched torch model.

The same K networks scikit-learn's ``MLPRegressor((256, 256))`` fits one per factor (Dittadi
et al. 2021, Sec. 4: "We independently train one predictor per factor"), step for step:

    f_k(z) = W3_k relu(W2_k relu(W1_k z + b1_k) + b2_k) + b3_k,  Glorot-uniform start
             U(+-sqrt(6 / (fan_in + fan_out))) for weights and biases alike;
    loss_k(batch) = 1/(2B) sum_i (f_k(z_i) - t_ik)^2 + alpha/(2B) sum_l ||W_l_k||^2,
             minibatches of min(200, N) in a fresh shuffle each epoch;
    Adam (lr 1e-3, betas 0.9 / 0.999, eps 1e-8) in scikit-learn's form,
             step = lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps);
    early stopping on R2 of a 10% validation split: stop once 11 epochs in a row fail to
             beat the best by 1e-4 (``n_iter_no_change`` 10), at most 200 epochs, the weights
             of the best epoch kept.

Its random draws are scikit-learn's own: the start, the validation split and every epoch's
shuffle come from ``numpy.random.RandomState(seed)`` consumed in the order ``MLPRegressor``
consumes it, and scikit-learn's per-factor models each start that stream afresh, so all K
networks here share one start, one split and one order, as there. What is left to differ is
arithmetic: float32 (the default) against scikit-learn's float64, and the order of sums
inside a matrix product. In float64 the two agree to rounding
(tests/test_probe_mlp_torch.py); in float32 rounding can flip an early-stopping decision, and
how far that moves a score is measured against scikit-learn's own seed-to-seed spread in
docs/performance/scoring.md.

The K networks train as one: a (K, fan_in, fan_out) weight per layer and one batched product
per layer, on the device the probe is given (a trial's GPU). A factor whose early stopping
ends leaves the batch, with its best weights kept, so each network trains exactly as long as
its scikit-learn twin would.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from sklearn.model_selection import train_test_split
from sklearn.utils import shuffle

from raystudy.metrics.probes._registry import as_targets, register_probe

#: Rows predicted at once (bounds the (K, rows, 256) activations on a GPU).
PREDICT_CHUNK = 8192


@register_probe("mlp_torch")
@dataclass(eq=False)
class TorchMLPProbe:
    """``mlp_sklearn`` step for step, as one batched torch model on the scoring device.

    ``dtype`` float32 (the default) or float64 (which matches scikit-learn to rounding)."""

    seed: int = 0
    n_jobs: int = 1
    device: str = "cpu"
    dtype: Literal["float32", "float64"] = "float32"
    hidden: tuple[int, ...] = (256, 256)
    max_iter: int = 200
    learning_rate_init: float = 1e-3
    alpha: float = 1e-4
    batch_size: int = 200
    validation_fraction: float = 0.1
    n_iter_no_change: int = 10
    tol: float = 1e-4
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-8

    @staticmethod
    def implementation(device: str = "cpu") -> str:
        """How this probe computes, for a run's tags."""
        return f"torch batched float32 on {device}"

    def fit(self, X: ArrayLike, Y: ArrayLike) -> TorchMLPProbe:
        targets = as_targets(Y)
        codes = np.asarray(X, dtype=np.float64)
        with _settings(self.n_jobs):
            self.params_, self.n_iter_ = _fit(self, codes, targets)
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        codes = np.asarray(X, dtype=np.float64)
        with _settings(self.n_jobs), torch.no_grad():
            out = [
                _forward(self.params_, self._tensor(codes[i : i + PREDICT_CHUNK]))
                for i in range(0, len(codes), PREDICT_CHUNK)
            ]
        if not out:
            return np.zeros((0, len(self.params_[0][0])), dtype=np.float64)
        return torch.cat(out, dim=1).T.double().cpu().numpy()

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array, dtype=getattr(torch, self.dtype), device=self.device)


@contextlib.contextmanager
def _settings(n_jobs: int) -> Iterator[None]:
    """The trial's threads, and full float32 products: a process that allowed TF32 (10-bit
    mantissas) for its training would otherwise round the probe's products on a GPU."""
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    torch.set_num_threads(max(1, n_jobs))
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(precision)


#: Per layer, [weights (K, fan_in, fan_out), biases (K, 1, fan_out)].
Params = list[list[torch.Tensor]]


def _forward(params: Params, x: torch.Tensor) -> torch.Tensor:
    """(N, D) codes -> (K, N) outputs of every network."""
    h = x.expand(len(params[0][0]), -1, -1)
    for i, (w, b) in enumerate(params):
        h = torch.baddbmm(b, h, w)
        if i < len(params) - 1:
            h = torch.relu(h)
    return h.squeeze(-1)


def _start(probe: TorchMLPProbe, dims: list[int], k: int, rs: np.random.RandomState) -> Params:
    """scikit-learn's ``_init_coef`` draws, in its order, repeated for all K networks."""
    params = []
    for fan_in, fan_out in itertools.pairwise(dims):
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        w = rs.uniform(-bound, bound, (fan_in, fan_out))
        b = rs.uniform(-bound, bound, fan_out)
        params.append(
            [
                probe._tensor(np.broadcast_to(w, (k, fan_in, fan_out)).copy()),
                probe._tensor(np.broadcast_to(b, (k, 1, fan_out)).copy()),
            ]
        )
    return params


def _r2(y: torch.Tensor, pred: torch.Tensor) -> np.ndarray:
    """scikit-learn's ``r2_score`` per network in float64 ((Ka, N) each): a constant target
    scores 1 when predicted exactly, else 0; a non-finite prediction NaN."""
    y64, p64 = y.double(), pred.double()
    sse = ((y64 - p64) ** 2).sum(dim=1).cpu().numpy()
    sst = ((y64 - y64.mean(dim=1, keepdim=True)) ** 2).sum(dim=1).cpu().numpy()
    finite = torch.isfinite(p64).all(dim=1).cpu().numpy()
    score = 1.0 - sse / np.where(sst > 0, sst, 1.0)
    score = np.where(sst > 0, score, np.where(sse == 0, 1.0, 0.0))
    return np.where(finite, score, np.nan)


def _fit(probe: TorchMLPProbe, codes: np.ndarray, targets: np.ndarray) -> tuple[Params, np.ndarray]:
    """The best weights of every network, and the epochs each ran (scikit-learn's n_iter_)."""
    n, k = len(codes), targets.shape[1]
    on = probe.device
    rs = np.random.RandomState(probe.seed)
    params = _start(probe, [codes.shape[1], *probe.hidden, 1], k, rs)
    train, val = train_test_split(
        np.arange(n), random_state=rs, test_size=probe.validation_fraction
    )
    if len(val) < 2:
        raise ValueError(
            f"mlp_torch: {n} training points leave {len(val)} for the validation split; "
            "early stopping needs at least 2"
        )
    x_train, x_val = probe._tensor(codes[train]), probe._tensor(codes[val])
    y_train = probe._tensor(targets[train]).T.contiguous()  # (K, N)
    y_val = probe._tensor(targets[val]).T.contiguous()
    batch = min(probe.batch_size, len(train))
    adam = _Adam(probe, params)
    best = np.full(k, -np.inf)
    stale = np.zeros(k, dtype=int)
    kept = [[p.detach().clone() for p in layer] for layer in params]
    active = np.arange(k)  # the networks still training, in the order of `params`' rows
    epochs = np.zeros(k, dtype=int)
    order = np.arange(len(train))
    for _ in range(probe.max_iter):
        order = shuffle(order, random_state=rs)
        rows = torch.as_tensor(order, device=on)
        for start in range(0, len(train), batch):
            idx = rows[start : start + batch]
            adam.step(x_train[idx], y_train[:, idx])
        epochs[active] += 1
        with torch.no_grad():
            score = _r2(y_val, _forward(adam.params, x_val))
        last = best[active]
        stale[active] = np.where(score < last + probe.tol, stale[active] + 1, 0)
        improved = score > last  # NaN never improves, as in scikit-learn
        best[active] = np.where(improved, score, last)
        if improved.any():
            _copy_rows(kept, adam.params, active[improved], np.flatnonzero(improved), on)
        going = stale[active] <= probe.n_iter_no_change
        if not going.any():
            break
        if not going.all():  # stopped networks leave the batch, their moments with them
            keep = torch.as_tensor(np.flatnonzero(going), device=on)
            adam.keep(keep)
            y_train, y_val = y_train[keep], y_val[keep]
            active = active[going]
    never = ~np.isfinite(best[active])  # no epoch scored (all NaN): the last weights
    if never.any():
        _copy_rows(kept, adam.params, active[never], np.flatnonzero(never), on)
    return kept, epochs


def _copy_rows(
    into: Params, source: Params, rows_into: np.ndarray, rows_from: np.ndarray, device: str
) -> None:
    to = torch.as_tensor(rows_into, device=device)
    of = torch.as_tensor(rows_from, device=device)
    with torch.no_grad():
        for into_layer, layer in zip(into, source, strict=True):
            for into_p, p in zip(into_layer, layer, strict=True):
                into_p[to] = p[of].detach()


class _Adam:
    """The networks' parameters and scikit-learn's Adam over them (``AdamOptimizer``:
    the bias correction folded into the step size, eps added to sqrt(v) uncorrected)."""

    def __init__(self, probe: TorchMLPProbe, params: Params) -> None:
        self.probe = probe
        self.params = [[p.requires_grad_(True) for p in layer] for layer in params]
        self.first = [[torch.zeros_like(p) for p in layer] for layer in params]
        self.second = [[torch.zeros_like(p) for p in layer] for layer in params]
        self.t = 0

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """One minibatch: the loss's gradients and one update of every network."""
        p = self.probe
        pred = _forward(self.params, x)
        penalty = sum((w**2).sum() for w, _ in self.params)
        # Summed over the networks: each network's gradient is that of its own loss.
        loss = 0.5 * ((pred - y) ** 2).mean(dim=1).sum() + 0.5 * p.alpha * penalty / len(x)
        grads = torch.autograd.grad(loss, [q for layer in self.params for q in layer])
        self.t += 1
        lr = p.learning_rate_init * np.sqrt(1 - p.beta_2**self.t) / (1 - p.beta_1**self.t)
        with torch.no_grad():
            flat = zip(
                (q for layer in self.params for q in layer),
                (m for layer in self.first for m in layer),
                (v for layer in self.second for v in layer),
                grads,
                strict=True,
            )
            for q, m, v, g in flat:
                m.mul_(p.beta_1).add_(g, alpha=1 - p.beta_1)
                v.mul_(p.beta_2).addcmul_(g, g, value=1 - p.beta_2)
                q.sub_(lr * m / (v.sqrt() + p.epsilon))

    def keep(self, rows: torch.Tensor) -> None:
        """Only the networks of `rows` go on training."""
        with torch.no_grad():
            self.params = [
                [q[rows].detach().requires_grad_(True) for q in layer] for layer in self.params
            ]
            self.first = [[m[rows] for m in layer] for layer in self.first]
            self.second = [[v[rows] for v in layer] for layer in self.second]
