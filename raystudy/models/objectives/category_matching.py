"""CascadeVAE's choice of each image's category (Jeong & Song, ICML 2019, "Learning Discrete
and Continuous Factors of Data via Alternating Disentanglement"): the discrete step of its
alternating minimisation, with the encoder and decoder held fixed.

Given u[i, k] = -log p(x_i | z_i, e_k), the reconstruction loss of image i decoded from its
continuous code with category k (e_k one-hot), the batch's categories c minimise

    sum_i u[i, c_i] + lambda * sum_k n_k (n_k - 1) / 2,     n_k = #{i : c_i = k},

the second term a penalty on pairs of images sharing a category, which spreads the batch over
the categories. The authors' code (snu-mllab/DisentanglementICML19 `utils/ortools_op.py`,
reused by Montero et al. 2022's `src/models/matching.py`) solves it as a min-cost flow whose
m-th unit into category k (m = 0, 1, ...) costs lambda * m more, with costs scaled by 10^4 and
truncated to integers. Here the same problem is the rectangular assignment of the B images to
B * K slots (k, m) at cost u[i, k] + lambda * m: slot costs grow with m, so an optimal
assignment fills each category's slots from m = 0 and pays exactly the penalty above; scipy's
`linear_sum_assignment` (Crouse 2016) solves it exactly, in floats.

At evaluation (no batch to balance) an image's category is its argmin_k u[i, k], as in both
codes' evaluation paths.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment


def balanced_categories(unary: NDArray[np.floating], balance: float) -> NDArray[np.int64]:
    """argmin_c sum_i unary[i, c_i] + balance * sum_k n_k (n_k - 1) / 2, as [B] indices.

    `unary` is [B, K]; `balance` >= 0 (0: each image's cheapest category).
    """
    if unary.ndim != 2 or unary.shape[1] < 1:
        raise ValueError(f"unary costs must be [images, categories], got shape {unary.shape}")
    if balance < 0:
        raise ValueError(f"the balance weight must be >= 0, got {balance}")
    b, k = unary.shape
    # Column k * b + m is category k's m-th slot.
    slot_cost = balance * np.arange(b, dtype=np.float64)
    cost = (unary.astype(np.float64)[:, :, None] + slot_cost[None, None, :]).reshape(b, k * b)
    rows, cols = linear_sum_assignment(cost)
    categories = np.empty(b, dtype=np.int64)
    categories[rows] = cols // b
    return categories


def matching_cost(
    unary: NDArray[np.floating], categories: NDArray[np.int64], balance: float
) -> float:
    """The objective `balanced_categories` minimises, at the given categories."""
    counts = np.bincount(categories, minlength=unary.shape[1])
    picked = unary[np.arange(unary.shape[0]), categories].sum()
    return float(picked + balance * (counts * (counts - 1) / 2).sum())
