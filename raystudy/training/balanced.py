"""A batch sampler that gives every shape the same weight: Montero et al. (NeurIPS 2022)'s
``rebalance_dataset``, the training data of their decoder test.

Their code (``mmrl/lost-in-latent-space``, ``scripts/ingredients/training.py``,
``init_loader``; ``src/dataset/wrappers.py``, ``get_balanced_sampler`` and
``ImbalancedSampler``) draws each training image with replacement, with probability
proportional to 1 / (the number of training images of its shape), the shape being the first
factor whose name contains "shape". That is: a shape uniformly among those the training set
holds, then an image uniformly among the training images of that shape, which is how this
sampler draws, row by row. A condition that holds one shape out of part of the grid (square x
pos_x > 0.5) otherwise shows that shape less often than the others; rebalanced, each shape is
a third (dSprites) of the batches.

Each shape's part of the split's encoder set is sampled by the split machinery
(`Split.sample`), so the draws stay inside the encoder set exactly; a shape whose part is too
sparse to sample by rejection counts as absent (no Montero condition has one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, SelectorError, Split
from raystudy.training.loop import BatchSampler

#: The code balances the first factor whose name holds this word (dSprites' and 3dshapes'
#: ``shape``, MPI3D's ``object_shape``).
SHAPE_WORD = "shape"


def shape_factor(names: Sequence[str]) -> int:
    """The index of the factor the balancing is over (the module doc); ValueError naming the
    factors when there is none."""
    for k, name in enumerate(names):
        if SHAPE_WORD in name:
            return k
    raise ValueError(
        f"rebalancing by shape needs a factor whose name holds {SHAPE_WORD!r}; the dataset has "
        f"{', '.join(names)}"
    )


class ShapeBalancedSampler(BatchSampler):
    """Single clean images of the split's encoder set, each row's shape drawn uniformly among
    the shapes that set holds, then the image uniformly among that shape's (module doc)."""

    def __init__(
        self,
        dataset: GroundTruthDataset,
        split: Split,
        batch_size: int,
        device: torch.device,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(dataset, split, batch_size, None, False, device, rng)
        k = shape_factor(dataset.factors.names)
        name = dataset.factors.names[k]
        encoder = split.selector("encoder") or {}
        self.shapes: list[int] = []
        self.parts: list[Split] = []
        for value in range(dataset.factors.sizes[k]):
            part = Split(
                f"{split.name}[{name}={value}]",
                {"all": [dict(encoder), {name: [value]}]},
                [],
                dataset,
            )
            try:
                part.check_nonempty()
            except SelectorError:
                continue  # a shape the encoder set does not hold is never drawn
            self.shapes.append(value)
            self.parts.append(part)
        if not self.parts:
            raise ValueError(f"split {split.name!r}: its encoder set holds no {name} to balance")

    def draw(self) -> tuple[np.ndarray, np.ndarray | None]:
        which = self.rng.integers(len(self.parts), size=self.batch_size)
        out = np.empty((self.batch_size, self.dataset.factors.num_factors), dtype=np.int64)
        for j in np.unique(which):
            rows = np.flatnonzero(which == j)
            out[rows] = self.parts[j].sample("encoder", rows.size, self.rng)
        return out, None
