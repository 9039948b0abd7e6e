"""A picture of a dataset before a study: one row of samples per domain, same scenes in each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.splits.split import Split

GAP = 2  # pixels of white between tiles


def sample_indices(ds: GroundTruthDataset, n: int, seed: int) -> np.ndarray:
    """``n`` feasible combinations drawn uniformly (a split with no holdout samples them)."""
    return Split("preview", None, [], ds).sample("encoder", n, seed)


def preview_grid(ds: GroundTruthDataset, n: int = 8, seed: int = 0) -> np.ndarray:
    """``uint8`` RGB image: row ``r`` shows the same ``n`` samples rendered in
    ``ds.domains[r]``, tiles separated by white gaps."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    idx = torch.from_numpy(sample_indices(ds, n, seed))
    rows = [ds.render(idx, domain=domain).cpu() for domain in ds.domains]
    res = ds.resolution
    height = len(rows) * res + (len(rows) + 1) * GAP
    width = n * res + (n + 1) * GAP
    canvas = np.ones((height, width, 3), dtype=np.float32)
    for r, images in enumerate(rows):
        rgb = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images
        for c in range(n):
            top, left = GAP + r * (res + GAP), GAP + c * (res + GAP)
            canvas[top : top + res, left : left + res] = rgb[c].permute(1, 2, 0).numpy()
    return (canvas * 255.0 + 0.5).astype(np.uint8)


def write_preview(ds: GroundTruthDataset, out: Path, n: int = 8, seed: int = 0) -> Path:
    """Write :func:`preview_grid` as a PNG (parent folders created); returns the path."""
    from PIL import Image

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(preview_grid(ds, n, seed)).save(out)
    return out
