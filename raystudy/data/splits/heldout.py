"""Which inputs of a split its encoder never trained on, and the nearest ones it did: what a
trial's held-out reconstruction figures show (Montero et al. 2021, Figs. 2a/9/12: a held-out
combination reconstructed as a blob, or as the nearest seen shape; Dittadi et al. 2021,
Figs. 7/16/17: unseen hues and the `real` domain).

A split's *held-out sets* (:func:`heldout_sets`) are its ``heldout`` role, named
``heldout``, and each scenario whose test set is out of distribution for the encoder: one
tested in a domain the encoder never trains in (``sim`` is the only one it does), or one that
names ``ood_factors`` and holds combinations outside the encoder set. An OOD1 scenario
(Dittadi's ``ood1_*``: the probes are out of distribution, the encoder is not) is therefore
not held out, and a scenario whose test set is the ``heldout`` set (Montero's extrapolation)
is not shown twice. Schott et al.'s scenarios name no ``ood_factors``: their ``heldout`` set
is the one shown.

Pure numpy over a :class:`~raystudy.data.splits.split.Split`: no torch, no drawing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from raystudy.data.splits.selectors import Selector
from raystudy.data.splits.split import Split

#: The domain every encoder trains in (`training.loop` renders the encoder set in it).
TRAIN_DOMAIN = "sim"
#: Draws from a scenario's test set that decide whether it reaches outside the encoder set.
_PROBE_DRAWS = 512
#: Candidate draws per wanted image, for test sets only partly outside the encoder set.
_OVERDRAW = 64


@dataclass(frozen=True)
class HeldoutSet:
    """One set of unseen inputs: ``name`` is ``heldout`` or the scenario's name, ``role`` the
    split role its combinations are drawn from, ``domain`` the domain they are rendered in."""

    name: str
    role: str
    domain: str

    @property
    def shifts_domain(self) -> bool:
        return self.domain != TRAIN_DOMAIN


def heldout_sets(split: Split) -> list[HeldoutSet]:
    """The split's held-out sets, in order: ``heldout`` first, then its scenarios'."""
    sets = []
    if "heldout" in split.roles:
        sets.append(HeldoutSet("heldout", "heldout", TRAIN_DOMAIN))
    for name, scn in split.scenarios.items():
        role = f"{name}/test"
        if scn.domain != TRAIN_DOMAIN:
            sets.append(HeldoutSet(name, role, scn.domain))
        elif scn.ood_factors and not (sets and _same_set(scn.test, split.heldout)):
            probe = split.sample(role, _PROBE_DRAWS, np.random.default_rng(0))
            if not split.mask("encoder", probe).all():
                sets.append(HeldoutSet(name, role, scn.domain))
    return sets


def _same_set(a: Selector, b: Selector) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except ValueError:  # selectors holding arrays (grid_index) compare elementwise
        return False


def draw_unseen(split: Split, held: HeldoutSet, n: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``n`` combinations of ``held``, ``(m, K)``: for a set in the training domain only
    those outside the encoder set (a test set may be only partly outside it); a domain shift
    makes every combination of its set unseen as an image."""
    if held.shifts_domain:
        return split.sample(held.role, n, rng)
    candidates = split.sample(held.role, n * _OVERDRAW, rng)
    return candidates[~split.mask("encoder", candidates)][:n]


def nearest_seen(
    queries: np.ndarray,
    sizes: Sequence[int],
    in_set: Callable[[np.ndarray], np.ndarray],
    pool: np.ndarray,
) -> np.ndarray:
    """For each row of ``queries`` ``(n, K)``, the closest combination that ``in_set`` accepts.

    Distance: the L1 distance of factor indices, each factor scaled to [0, 1] (a step of a
    3-valued shape weighs as much as half the scale range). Candidates: the query itself,
    every combination one factor away from it (all values of each factor: the exact nearest
    when a single factor's change leads back into the set, as it does for one held-out value
    or a recombination), and the rows of ``pool`` (draws from the set, for queries whose every
    one-factor neighbour is unseen too). Ties go to the first candidate in that order, so the
    answer is a function of the arguments. Raises ValueError when no candidate is in the set.
    """
    queries = np.asarray(queries, dtype=np.int64)
    pool = np.asarray(pool, dtype=np.int64).reshape(-1, queries.shape[1])
    scale = np.maximum(np.asarray(sizes, dtype=np.float64) - 1.0, 1.0)
    out = np.empty_like(queries)
    for i, query in enumerate(queries):
        candidates = np.concatenate([query[None], _one_factor_moves(query, sizes), pool])
        dist = (np.abs(candidates - query) / scale).sum(axis=1)
        dist[~np.asarray(in_set(candidates), dtype=bool)] = np.inf
        best = int(np.argmin(dist))
        if not np.isfinite(dist[best]):
            raise ValueError(
                f"no combination of the set is near {query.tolist()}: none of its one-factor "
                f"neighbours and none of the {len(pool)} pool rows is in it"
            )
        out[i] = candidates[best]
    return out


def _one_factor_moves(query: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Every combination equal to ``query`` but in one factor, factor by factor, value by
    value (``query`` itself among them)."""
    rows = []
    for k, size in enumerate(sizes):
        block = np.repeat(query[None], size, axis=0)
        block[:, k] = np.arange(size)
        rows.append(block)
    return np.concatenate(rows)


def differences(query: np.ndarray, seen: np.ndarray, names: Sequence[str]) -> str:
    """What separates a query from its nearest seen combination, e.g. ``hue 4→3``; the first
    factor that differs and how many more (a column label: it must stay narrow)."""
    parts = [
        f"{name} {a}→{b}"
        for name, a, b in zip(names, query.tolist(), seen.tolist(), strict=True)
        if a != b
    ]
    return parts[0] + (f"\n+{len(parts) - 1} more" if len(parts) > 1 else "") if parts else ""
