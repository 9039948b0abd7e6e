"""Triples of Montero et al. (ICLR 2021, "The role of disentanglement in generalisation"),
Sec. 2.3's image composition task: (reference, transform, action) -> target.

The action is one factor a (one-hot over the dataset's K factors, as the authors' code
codes it); the target has the reference's factors except factor a, which takes the
transform's value:

    target[k] = reference[k] for k != a,   target[a] = transform[a] != reference[a]

Sampling (:func:`sample_triples`), given the set the target must lie in and the set the two
inputs must lie in (``None``: any feasible combination of the dataset):

1. target uniform over its set, action a uniform over the factors of more than one value, the
   reference equal to the target but in factor a, there uniform over the other values that
   keep it inside the input set (a target with no such value, factor a pinned there, is drawn
   again with a new action: in the three Montero splits it never is);
2. the transform uniform over the input set's combinations whose factor a equals the target's.

Training triples (:data:`TRAIN_ROLES`) keep all three images in the split's encoder set. Test
triples (:data:`HELDOUT_ROLES`) have their target in the held-out set, "so that the
transformed image is not outside the current set" (the paper), and inputs anywhere: the
paper restricts only the output, and held-out inputs alone cannot work (in recombination-to-
element and -to-range the held-out set fixes the shape, so no action on shape stays inside
it), nor training inputs alone (an extrapolation target with pos_x >= 16 needs a transform
with that pos_x, itself held out). The authors' public code (``mmrl/disent-and-gen``,
``Triplets``) draws the reference first and then a target; on a set that is a per-factor box
the two orders give the same distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raystudy.data.splits.split import Split

#: (target role, input role) of training triples: all three images in the encoder set.
TRAIN_ROLES: tuple[str, str | None] = ("encoder", "encoder")
#: (target role, input role) of test triples: the target held out, the inputs anywhere.
HELDOUT_ROLES: tuple[str, str | None] = ("heldout", None)
_MAX_ROUNDS = 200


@dataclass(frozen=True)
class Triples:
    """Factor indices [N, K] of each image of N triples, and the action (a factor) [N]."""

    reference: np.ndarray
    transform: np.ndarray
    target: np.ndarray
    action: np.ndarray

    def one_hot(self, num_factors: int) -> np.ndarray:
        """The actions as one-hot float32 rows [N, K]: the model's action input."""
        out = np.zeros((self.action.size, num_factors), dtype=np.float32)
        out[np.arange(self.action.size), self.action] = 1.0
        return out


def composition_problem(split: Split) -> str | None:
    """Why the composition task cannot be scored on `split`, or None: it has no held-out set
    (the test triples' targets)."""
    if "heldout" in split.roles:
        return None
    return (
        f"the composition task scores triples whose target is held out, and split "
        f"{split.name!r} holds nothing out; use a split with a held-out set "
        "(montero_element, montero_range, montero_extrapolation, montero2022_*, schott_*, "
        "or one written in the spec with a heldout set)"
    )


def _inside(split: Split, role: str | None, idx: np.ndarray) -> np.ndarray:
    if role is not None:
        return split.mask(role, idx)
    ds = split.dataset
    if ds.every_state_feasible:
        return np.ones(idx.shape[0], dtype=bool)
    return ds.feasible(idx).cpu().numpy()


def _draw_pairs(
    split: Split, target_role: str, input_role: str | None, n: int, gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(target, reference, action) rows of step 1 of the module doc."""
    sizes = np.asarray(split.dataset.factors.sizes)
    actionable = np.flatnonzero(sizes > 1)
    if actionable.size == 0:
        raise ValueError(f"dataset {split.dataset.name!r} has no factor with two values")
    width = int(sizes.max())
    target = np.empty((n, sizes.size), dtype=np.int64)
    reference = np.empty_like(target)
    action = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    for _ in range(_MAX_ROUNDS):
        m = todo.size
        t = split.sample(target_role, m, gen)
        a = actionable[gen.integers(0, actionable.size, size=m)]
        # Every other value of factor a, each row's candidates at once: [m, width].
        values = np.broadcast_to(np.arange(width), (m, width))
        candidates = np.repeat(t[:, None, :], width, axis=1)
        candidates[np.arange(m)[:, None], np.arange(width), a[:, None]] = values
        valid = (values < sizes[a][:, None]) & (values != t[np.arange(m), a][:, None])
        inside = np.zeros_like(valid)
        inside[valid] = _inside(split, input_role, candidates[valid])
        # A uniform choice among each row's valid values: the largest of i.i.d. keys.
        keys = np.where(inside, gen.random((m, width)), -1.0)
        pick = keys.argmax(axis=1)
        ok = inside.any(axis=1)  # a row without any (factor a pinned there) is drawn again
        target[todo[ok]], action[todo[ok]] = t[ok], a[ok]
        reference[todo[ok]] = candidates[np.flatnonzero(ok), pick[ok]]
        todo = todo[~ok]
        if todo.size == 0:
            return target, reference, action
    raise ValueError(
        f"split {split.name!r}: no reference in the {input_role or 'whole'} set one factor "
        f"away from targets in {target_role!r} after {_MAX_ROUNDS} rounds"
    )


def _draw_transforms(
    split: Split,
    input_role: str | None,
    target: np.ndarray,
    action: np.ndarray,
    gen: np.random.Generator,
) -> np.ndarray:
    """Step 2 of the module doc: uniform over the grid, factor a set to the target's, kept
    when inside the input set (an indicator, so uniform over the valid ones)."""
    space = split.dataset.factors
    n = target.shape[0]
    out = np.empty_like(target)
    todo = np.arange(n)
    for _ in range(_MAX_ROUNDS):
        cand = space.sample(todo.size, gen)
        rows = np.arange(todo.size)
        cand[rows, action[todo]] = target[todo, action[todo]]
        ok = _inside(split, input_role, cand)
        out[todo[ok]] = cand[ok]
        todo = todo[~ok]
        if todo.size == 0:
            return out
    raise ValueError(
        f"split {split.name!r}: too few transforms in the {input_role or 'whole'} set share "
        f"the targets' value of the action factor (none in {_MAX_ROUNDS} rounds)"
    )


def sample_triples(
    split: Split,
    n: int,
    rng: np.random.Generator,
    roles: tuple[str, str | None] = TRAIN_ROLES,
) -> Triples:
    """`n` composition triples (module doc) with the target in `roles[0]`'s set and both
    inputs in `roles[1]`'s (None: anywhere); :data:`TRAIN_ROLES` or :data:`HELDOUT_ROLES`."""
    target_role, input_role = roles
    target, reference, action = _draw_pairs(split, target_role, input_role, n, rng)
    transform = _draw_transforms(split, input_role, target, action, rng)
    return Triples(reference, transform, target, action)
