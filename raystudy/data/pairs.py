"""Whether weakly supervised pairs (differing in k factors, Locatello et al. 2020) can be
drawn from a split's encoder set: k can be at most the number of factors that vary there."""

from __future__ import annotations

from raystudy.data.base import GroundTruthDataset
from raystudy.data.selectors import bounding_box
from raystudy.data.splits import Split


def varying_in_encoder_set(dataset: GroundTruthDataset, split: Split) -> int:
    """How many factors take more than one value in the split's encoder set."""
    box = bounding_box(split.selector("encoder"), dataset.factors)
    return sum(int(allowed.sum()) > 1 for allowed in box)


def pair_k_problem(pair_k: int | str | None, varying: int, split: Split) -> str | None:
    """Why pairs differing in `pair_k` factors cannot be drawn from the split's encoder set,
    in which `varying` factors vary (`varying_in_encoder_set`), or None: k above that, or
    `random` (1..K-1) with fewer than 2."""
    if pair_k is None:
        return None
    if pair_k == "random" and varying < 2:
        return (
            f"k='random' needs at least 2 factors varying in split {split.name!r}'s "
            f"encoder set, it has {varying}"
        )
    if isinstance(pair_k, int) and pair_k > varying:
        return (
            f"k={pair_k}: pairs cannot differ in more factors than vary in split "
            f"{split.name!r}'s encoder set ({varying})"
        )
    return None
