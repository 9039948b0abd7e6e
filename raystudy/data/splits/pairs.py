"""Whether weakly supervised pairs (differing in k factors, Locatello et al. 2020, or drawn
from SlowVAE's Laplace transitions) can be drawn from a split's encoder set: k can be at most
the number of factors that vary there, and a Laplace pair needs one varying factor that is
not categorical."""

from __future__ import annotations

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.splits.selectors import bounding_box
from raystudy.data.splits.split import Split

#: Factors a Laplace pair keeps (SlowVAE's release, ``scripts/dataset.py``: each dataset's
#: ``categorical`` array: dSprites' and Shapes3D's shape, MPI3D's object shape, SmallNORB's
#: category and instance, Cars3D's object), by raystudy's factor names.
CATEGORICAL_FACTORS = frozenset({"shape", "object_shape", "category", "instance", "object_type"})


def categorical_columns(dataset: GroundTruthDataset) -> list[int]:
    """The columns of the dataset's categorical factors (`CATEGORICAL_FACTORS`)."""
    return [k for k, n in enumerate(dataset.factors.names) if n in CATEGORICAL_FACTORS]


def laplace_free(dataset: GroundTruthDataset, split: Split) -> int:
    """How many factors a Laplace pair can change in the split's encoder set: those that vary
    there and are not categorical."""
    box = bounding_box(split.selector("encoder"), dataset.factors)
    fixed = set(categorical_columns(dataset))
    return sum(int(a.sum()) > 1 for k, a in enumerate(box) if k not in fixed)


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


def pairs_problem(
    pair_k: int | str | None, dataset: GroundTruthDataset, split: Split
) -> str | None:
    """Why an objective's pairs (`pair_k`: k, ``random`` or ``laplace``) cannot be drawn
    from the split's encoder set, or None."""
    if pair_k == "laplace":
        if laplace_free(dataset, split) >= 1:
            return None
        return (
            f"Laplace pairs need a factor that varies in split {split.name!r}'s encoder set "
            f"and is not categorical ({', '.join(sorted(CATEGORICAL_FACTORS))}); it has none"
        )
    return pair_k_problem(pair_k, varying_in_encoder_set(dataset, split), split)
