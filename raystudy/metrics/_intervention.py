"""Drawing and encoding observations for the intervention metrics (BetaVAE, FactorVAE).

Both metrics need observations whose factors are drawn at random except one, held fixed.
disentanglement_lib draws every observation afresh: ~1.9 M renders and encodes for the
BetaVAE score, ~1 M for FactorVAE, hours of CPU for a conv encoder. Two modes here:

- **pool** (default): draw ``pool_size`` (10,000) factor combinations once, encode them
  once, and take every observation of the metric from that pool. "Factor k fixed at v,
  the rest random" becomes "a pool member whose factor k is v", which has exactly the
  reference's distribution for each observation (the pool is a uniform sample, so its
  members with v_k = v are a uniform sample of the combinations with v_k = v); what
  changes is that the ~10^6 observations reuse 10^4 images, so the metric's features are
  correlated across points. The tests check that pool and fresh scores agree to 0.02.
- **fresh** (``pool=None``): the reference's procedure, every observation a new draw.

Infeasible combinations. The reference samples factors independently and so can draw
combinations a dataset cannot render. Here every combination comes from a ``sampler``
``(n, rng) -> (n, K)`` of allowed combinations; the default :class:`FeasibleSampler` draws
uniformly from the grid and redraws the rows ``dataset.feasible`` rejects (optionally also
those an ``accept`` mask rejects, e.g. a split's encoder set), and counts how many. Fixing a
factor never creates an infeasible state: the partner of an observation is another draw of
the sampler that happens to share the factor's value, never an edited combination.

``represent`` must be deterministic (the posterior mean), as in the reference: identical
combinations render to identical images, so each distinct combination is encoded once.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import torch

    from raystudy.data import GroundTruthDataset

Sampler = Callable[[int, np.random.Generator], NDArray[np.int64]]
Represent = Callable[["torch.Tensor"], Any]
Accept = Callable[[NDArray[np.int64]], Any]

#: The reference's pool-free draw count would be ~10^6; see the module docstring.
POOL_SIZE = 10_000


class FeasibleSampler:
    """Uniform over the dataset's feasible combinations (and ``accept``'s), by rejection.

    Draws uniformly from the full factor grid, keeps the rows that ``dataset.feasible``
    (and ``accept``, when given) allow, and redraws the others; ``drawn`` and ``rejected``
    count every row drawn and rejected so far.

    Args:
        dataset: the ground-truth dataset (its ``factors.sizes`` and ``feasible``).
        accept: optional ``(n, K) indices -> (n,) bool`` restriction, e.g.
            ``lambda idx: split.mask("encoder", idx)``.
        max_rounds: rejection rounds before giving up (acceptance rate ~0).
    """

    def __init__(
        self, dataset: GroundTruthDataset, accept: Accept | None = None, max_rounds: int = 100
    ) -> None:
        self.dataset = dataset
        self.accept = accept
        self.max_rounds = max_rounds
        self.sizes = np.asarray(dataset.factors.sizes, dtype=np.int64)
        self.drawn = 0
        self.rejected = 0

    @property
    def rejected_fraction(self) -> float:
        """Rejected rows over drawn rows so far (0 before any draw)."""
        return self.rejected / self.drawn if self.drawn else 0.0

    def __call__(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        out = np.empty((n, self.sizes.size), dtype=np.int64)
        todo = np.arange(n)
        rate = 1.0
        for _ in range(self.max_rounds):
            if todo.size == 0:
                return out
            # Oversample by the acceptance rate seen so far, so a sparse set takes few rounds.
            m = min(math.ceil(todo.size / max(rate, 1e-3)) + 16, 10 * todo.size + 10_000_000)
            candidates = rng.integers(0, self.sizes, size=(m, self.sizes.size), dtype=np.int64)
            ok = self._allowed(candidates)
            self.drawn += m
            self.rejected += int((~ok).sum())
            rate = max(float(ok.mean()), 1e-6)
            kept = candidates[ok][: todo.size]
            out[todo[: len(kept)]] = kept
            todo = todo[len(kept) :]
        if todo.size == 0:
            return out
        raise ValueError(
            f"could not draw {n} allowed factor combinations in {self.max_rounds} rounds; "
            f"{self.rejected} of {self.drawn} draws were infeasible or not accepted"
        )

    def _allowed(self, indices: NDArray[np.int64]) -> NDArray[np.bool_]:
        if getattr(self.dataset, "every_state_feasible", False):
            ok = np.ones(len(indices), dtype=bool)
        else:
            ok = _to_numpy(self.dataset.feasible(indices)).astype(bool)
        if self.accept is not None:
            ok &= _to_numpy(self.accept(indices)).astype(bool)
        return ok


@dataclass(frozen=True)
class CodePool:
    """Factor combinations drawn once, with their codes (see the module docstring).

    Attributes:
        indices: (P, K) factor indices.
        codes: (P, D) codes of their observations.
        rejected_fraction: share of the sampler's draws rejected while drawing them (NaN if
            the sampler does not say).
    """

    indices: NDArray[np.int64]
    codes: NDArray[np.float64]
    rejected_fraction: float


def encode(
    dataset: GroundTruthDataset,
    represent: Represent,
    indices: NDArray[np.int64],
    *,
    render_batch_size: int = 256,
    device: str | torch.device = "cpu",
) -> NDArray[np.float64]:
    """Codes of the observations of ``indices``, each distinct combination encoded once.

    Args:
        dataset: renders ``(B, K)`` indices to images.
        represent: images -> (B, D) codes (tensor or array); must be deterministic.
        indices: (N, K) factor indices.
        render_batch_size: combinations rendered and encoded per call.
        device: where the indices (and so the images) are made.

    Returns:
        (N, D) float64 codes.
    """
    import torch

    sizes = tuple(int(s) for s in dataset.factors.sizes)
    flat = np.ravel_multi_index(tuple(np.asarray(indices, dtype=np.int64).T), sizes)
    unique, inverse = np.unique(flat, return_inverse=True)
    combos = np.stack(np.unravel_index(unique, sizes), axis=1).astype(np.int64)
    chunks = []
    with torch.no_grad():
        for start in range(0, len(combos), render_batch_size):
            idx = torch.as_tensor(combos[start : start + render_batch_size], device=device)
            chunks.append(_to_numpy(represent(dataset.render(idx))).astype(np.float64))
    codes = np.concatenate(chunks) if chunks else np.zeros((0, 0))
    if codes.ndim != 2:
        raise ValueError(f"represent must return (B, D) codes, got shape {codes.shape}")
    return codes[inverse.ravel()]


def draw_pool(
    dataset: GroundTruthDataset,
    represent: Represent,
    size: int = POOL_SIZE,
    *,
    sampler: Sampler | None = None,
    seed: int = 0,
    render_batch_size: int = 256,
    device: str | torch.device = "cpu",
    codes_of: Callable[[NDArray[np.int64]], NDArray[np.float64]] | None = None,
) -> CodePool:
    """Draw ``size`` combinations with ``sampler`` (default: feasible, uniform) and encode them.

    One pool can be passed to both intervention metrics (``pool=``) to encode only once.
    ``codes_of`` maps indices to codes directly instead of ``represent`` on rendered images:
    for a representation that is the ground truth (``gt_decoder``), which no image gives.
    """
    sampler = FeasibleSampler(dataset) if sampler is None else sampler
    before = sampler_counts(sampler)
    indices = np.asarray(sampler(size, np.random.default_rng([seed, 0])), dtype=np.int64)
    if codes_of is not None:
        codes = np.asarray(codes_of(indices), dtype=np.float64)
    else:
        codes = encode(
            dataset, represent, indices, render_batch_size=render_batch_size, device=device
        )
    return CodePool(indices, codes, rejected_since(sampler, before))


@dataclass(frozen=True)
class Intervention:
    """What BetaVAE and FactorVAE share: ``num_train`` + ``num_eval`` points of ``batch_size``
    observations each, whose factor combinations ``sampler`` draws from ``dataset``, rendered
    ``render_batch_size`` at a time on ``device`` and encoded by ``represent``; taken from a
    pool (``pool``: a size or a :class:`CodePool`) or, with ``pool=None``, drawn afresh."""

    dataset: GroundTruthDataset
    represent: Represent
    sampler: Sampler
    seed: int
    pool: CodePool | int | None
    batch_size: int
    num_train: int
    num_eval: int
    render_batch_size: int
    device: str | torch.device

    @property
    def num_points(self) -> int:
        return self.num_train + self.num_eval

    def codes(self, indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """:func:`encode` of ``indices``."""
        return encode(
            self.dataset,
            self.represent,
            indices,
            render_batch_size=self.render_batch_size,
            device=self.device,
        )

    def code_pool(self) -> CodePool:
        """``pool`` itself, or a pool of that size from :func:`draw_pool` (not for None)."""
        if isinstance(self.pool, CodePool):
            return self.pool
        assert self.pool is not None
        return draw_pool(
            self.dataset,
            self.represent,
            int(self.pool),
            sampler=self.sampler,
            seed=self.seed,
            render_batch_size=self.render_batch_size,
            device=self.device,
        )


def on_dataset(metric: Callable[..., dict[str, float]]) -> Callable[..., dict[str, float]]:
    """Decorator: ``metric(intervention, **options)`` becomes the function every intervention
    metric is (``raystudy.metrics.registry``), of the dataset, ``represent`` and the
    :class:`Intervention` settings as keywords, under the name and docstring of ``metric``.

    Args of the function made (beside the metric's own options):
        dataset: ground-truth dataset to render observations from.
        represent: images (B, C, H, W) -> codes (B, D); deterministic (posterior means).
        seed: all randomness of the score (the same seed scores every model on the same
            draws, as the reference's fixed ``RandomState(0)`` does).
        sampler: ``(n, rng) -> (n, K)`` allowed combinations; default
            :class:`FeasibleSampler` (uniform, feasible).
        pool: pool size, a pool from :func:`draw_pool` (shared by both metrics), or None for
            fresh draws (reference, slow).
        batch_size: observations (or pairs) per point (reference 64).
        num_train: points the classifier is built from (reference 10,000).
        num_eval: points it is scored on (reference 5,000).
        render_batch_size: observations rendered and encoded per call.
        device: where observations are rendered (that of ``represent``'s model).
        n_jobs: threads the metric may use.
    """

    def entry(
        dataset: GroundTruthDataset,
        represent: Represent,
        *,
        seed: int = 0,
        sampler: Sampler | None = None,
        pool: CodePool | int | None = POOL_SIZE,
        batch_size: int = 64,
        num_train: int = 10_000,
        num_eval: int = 5_000,
        render_batch_size: int = 256,
        device: str | torch.device = "cpu",
        n_jobs: int = 1,
        **options: Any,
    ) -> dict[str, float]:
        sampler = FeasibleSampler(dataset) if sampler is None else sampler
        setting = Intervention(
            dataset, represent, sampler, seed, pool,
            batch_size, num_train, num_eval, render_batch_size, device,
        )  # fmt: skip
        return metric(setting, n_jobs=n_jobs, **options)

    functools.update_wrapper(entry, metric)
    del entry.__wrapped__  # its signature is the dataset's, not the setting's
    return entry


def partners(
    values: NDArray[np.int64], anchors: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    """For each anchor row, another row of ``values`` with the same value, uniformly.

    Args:
        values: (P,) one factor's value for every pool member.
        anchors: any-shaped array of pool rows.
        rng: draws the partners.

    Returns:
        Pool rows, shaped like ``anchors``, never the anchor itself unless it is the only
        member of its value.
    """
    order = np.argsort(values, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    sorted_values = values[order]
    v = values[anchors]
    start = np.searchsorted(sorted_values, v, side="left")
    count = np.searchsorted(sorted_values, v, side="right") - start
    own = rank[anchors] - start
    # Skip over the anchor: an offset in 1..count-1 from its own position, cyclically.
    step = 1 + np.floor(rng.random(anchors.shape) * (count - 1)).astype(np.int64)
    offset = np.where(count > 1, (own + step) % np.maximum(count, 1), own)
    return order[start + offset]


def draws_with_values(
    sampler: Sampler,
    factor: int,
    values: NDArray[np.int64],
    rng: np.random.Generator,
    max_rounds: int = 1000,
) -> NDArray[np.int64]:
    """Fresh sampler draws conditioned on ``factor`` taking ``values[i]`` in row i.

    The sampler is drawn in rounds and each draw is matched to an open row with its value
    of ``factor``, so row i is distributed as the sampler's draws given v_factor =
    values[i], independently of the others (the reference's "fix one factor, draw the rest"
    for a uniform sampler, without ever editing a combination into an infeasible one).
    """
    out = np.empty((values.size, 0), dtype=np.int64)
    todo = np.arange(values.size)
    for _ in range(max_rounds):
        if todo.size == 0:
            return out
        candidates = np.asarray(sampler(int(1.5 * todo.size) + 64, rng), dtype=np.int64)
        if out.shape[1] == 0:
            out = np.empty((values.size, candidates.shape[1]), dtype=np.int64)
        # Rank open rows and candidates within each value; row r-th of value v takes the
        # r-th candidate of value v when there is one.
        row_order = todo[np.argsort(values[todo], kind="stable")]
        row_values = values[row_order]
        cand_order = np.argsort(candidates[:, factor], kind="stable")
        cand_values = candidates[cand_order, factor]
        row_rank = np.arange(row_order.size) - np.searchsorted(row_values, row_values, "left")
        start = np.searchsorted(cand_values, row_values, "left")
        count = np.searchsorted(cand_values, row_values, "right") - start
        matched = row_rank < count
        out[row_order[matched]] = candidates[cand_order[start[matched] + row_rank[matched]]]
        todo = np.sort(row_order[~matched])
    raise ValueError(f"could not draw combinations with the requested values of factor {factor}")


def sampler_counts(sampler: Sampler) -> tuple[int, int] | None:
    """(drawn, rejected) so far if the sampler counts them (like :class:`FeasibleSampler`)."""
    drawn, rejected = getattr(sampler, "drawn", None), getattr(sampler, "rejected", None)
    if isinstance(drawn, int) and isinstance(rejected, int):
        return drawn, rejected
    return None


def rejected_since(sampler: Sampler, before: tuple[int, int] | None) -> float:
    """Share of the sampler's draws since ``before`` that it rejected; NaN if it cannot say."""
    after = sampler_counts(sampler)
    if before is None or after is None:
        return float("nan")
    drawn, rejected = after[0] - before[0], after[1] - before[1]
    return rejected / drawn if drawn else 0.0


def varying(indices: NDArray[np.int64]) -> NDArray[np.int64]:
    """Factors that take more than one value among ``indices``: the ones worth fixing."""
    return np.flatnonzero(indices.max(axis=0) > indices.min(axis=0))


def _to_numpy(x: Any) -> NDArray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)
