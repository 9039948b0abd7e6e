"""SlowVAE's Laplace pairs (Klindt et al. 2021, their release's TupleLoader.truncated_laplace):
each free factor of the second frame drawn around the first's value with probability
proportional to exp(-|v - v1| rate / log(size)), categorical factors kept, never a pair
without a change, both frames inside the split's set."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raystudy.data import get_dataset, get_split
from raystudy.data.splits.pairs import CATEGORICAL_FACTORS, categorical_columns
from raystudy.data.splits.registry import split_from_spec
from raystudy.models import get_objective
from raystudy.spec import TrainConfig
from raystudy.training.loop import BatchSampler

CPU = torch.device("cpu")


def release_rule(size: int, start: int, rate: float) -> np.ndarray:
    """The release's per-factor probabilities (scipy's laplace.pdf, normalised)."""
    x = np.arange(size)
    p = np.exp(-np.abs(x - start) / (np.log(size) / rate))
    return p / p.sum()


def release_second(
    start: np.ndarray,
    sizes: list[int],
    categorical: np.ndarray,
    rate: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The release's truncated_laplace, step by step, for one first frame."""
    end = start.copy()
    for k, size in enumerate(sizes):
        end[k] = rng.choice(size, p=release_rule(size, int(start[k]), rate))
    end[categorical] = start[categorical]
    if not np.abs(start - end).sum():
        k = rng.choice(np.flatnonzero(~categorical))
        p = release_rule(sizes[k], int(start[k]), rate)
        p[start[k]] = 0.0
        end[k] = rng.choice(sizes[k], p=p / p.sum())
    return end


def test_each_free_factor_follows_the_releases_discretised_laplace() -> None:
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    fixed = categorical_columns(ds)
    assert [ds.factors.names[k] for k in fixed] == ["shape"]
    first, second = split.sample_laplace_pairs("encoder", 40_000, 1.0, fixed, 0)
    assert (first[:, 0] == second[:, 0]).all(), "shape is kept"
    assert ((first != second).any(axis=1)).all(), "every pair changes"
    names = ds.factors.names
    for col in (names.index("scale"), names.index("pos_x")):
        size = ds.factors.sizes[col]
        for start in (0, size // 2):
            rows = first[:, col] == start
            seen = np.bincount(second[rows, col], minlength=size) / rows.sum()
            # At rate 1 a pair left unchanged (then redrawn) is ~0.1%: each factor's rule holds.
            assert 0.5 * np.abs(seen - release_rule(size, start, 1.0)).sum() < 0.05, (
                names[col],
                start,
            )


def test_at_a_high_rate_the_forced_change_matches_the_release() -> None:
    # At rate 6 most factors stay: a pair without a change is common, and the release then
    # moves one free factor. Which factors change, and how many, must match its procedure.
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    fixed = categorical_columns(ds)
    first, second = split.sample_laplace_pairs("encoder", 20_000, 6.0, fixed, 2)
    categorical = np.isin(np.arange(ds.factors.num_factors), fixed)
    rng = np.random.default_rng(3)
    starts = split.sample("encoder", 20_000, rng)
    theirs = np.stack([release_second(s, ds.factors.sizes, categorical, 6.0, rng) for s in starts])
    ours_changed, their_changed = (first != second), (starts != theirs)
    assert np.abs(ours_changed.mean(axis=0) - their_changed.mean(axis=0)).max() < 0.02
    counts = [
        np.bincount(c.sum(axis=1), minlength=5) / len(c) for c in (ours_changed, their_changed)
    ]
    assert np.abs(counts[0] - counts[1]).max() < 0.02, counts


def test_a_random_rate_spreads_wider_than_a_large_one_and_pairs_stay_in_the_set() -> None:
    ds = get_dataset("color_dsprites")
    split = get_split("dittadi_hues", ds)  # the encoder set holds 8 of the 12 hues
    fixed = categorical_columns(ds)
    wide = split.sample_laplace_pairs("encoder", 5_000, None, fixed, 1)
    narrow = split.sample_laplace_pairs("encoder", 5_000, 10.0, fixed, 1)
    for first, second in (wide, narrow):
        assert split.mask("encoder", first).all() and split.mask("encoder", second).all()
    steps = [np.abs(a - b).sum(axis=1).mean() for a, b in (wide, narrow)]
    assert steps[0] > 1.5 * steps[1], steps


def test_slow_vae_draws_laplace_pairs_when_asked() -> None:
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    objective = get_objective("slow_vae", data_distribution="laplace", rate_data=2.0)
    assert objective.pair_k == "laplace" and objective.laplace_rate == 2.0
    assert get_objective("slow_vae", rate_data="random").laplace_rate is None
    sampler = BatchSampler.for_training(
        ds, split, TrainConfig(batch_size=64), objective, CPU, np.random.default_rng(0)
    )
    first, second = sampler._pairs(2_000)
    changed = (first != second).sum(axis=1)
    # Laplace transitions change several factors at once, unlike k-factor pairs.
    assert changed.min() >= 1 and changed.max() >= 3 and (first[:, 0] == second[:, 0]).all()


def test_a_split_with_only_categorical_factors_varying_is_refused() -> None:
    ds = get_dataset("dsprites")
    only_shape = {"scale": [0], "orientation": [0], "pos_x": [0], "pos_y": [0]}
    split = split_from_spec({"encoder": only_shape}, ds)
    assert "shape" in CATEGORICAL_FACTORS
    with pytest.raises(ValueError, match="not categorical"):
        BatchSampler(ds, split, 4, "laplace", False, CPU, np.random.default_rng(0))
