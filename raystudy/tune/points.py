"""How a Tune trial's config names the models it trains: grid points, Optuna draws, stacks.

A Tune trial's config is small on purpose: `{"point": i}` (the i-th point of the spec's grid),
`{"override": {...}}` (an Optuna draw) or `{"stack": k}` (the k-th stack of points that train
together, `seeds_per_trial`). This module turns it back into a `TrialConfig`, and names trials
and their folders after what varies across the points, for the trainable and for the readers
of Tune's storage alike.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raystudy.spec import TrialConfig, deep_merge, flatten, varying

#: Keys of a Tune trial's config: a grid point's index, or a stack's (`seeds_per_trial`).
POINT = "point"
STACK = "stack"


def trial_config(
    base: dict[str, Any], points: list[dict[str, Any]], config: dict[str, Any]
) -> TrialConfig:
    """The trial config of a Tune trial's `config`: a grid point by index, or an Optuna draw."""
    override = points[config[POINT]] if POINT in config else config["override"]
    return TrialConfig.model_validate(deep_merge(base, override))


def trial_labels(points: list[dict[str, Any]]) -> list[str]:
    """Short names from the values that vary across points, e.g. `003_ada_gvae_beta=4`."""
    keys = varying(points)
    labels = []
    for i, point in enumerate(points):
        flat = flatten(point)
        parts = [
            str(flat[k]) if k.endswith("objective") else f"{k.rsplit('.', 1)[-1]}={flat[k]}"
            for k in keys
            if k in flat
        ]
        text = re.sub(r"[^A-Za-z0-9_.=-]+", "-", "_".join(parts))[:80]
        labels.append(f"{i:03d}_{text}" if text else f"{i:03d}")
    return labels


def stack_labels(
    points: list[dict[str, Any]], stacks: list[list[int]], stack_over: Sequence[str] = ()
) -> list[str]:
    """Names of stacked trials: the label of what the models share, then what tells them
    apart: `..._seeds=0-1`, or with `stack_over` `..._beta=1,seed=0+beta=4,seed=0`."""
    apart = {"seed", *stack_over}
    flat = [flatten(p) for p in points]
    shared = [{k: v for k, v in flat[g[0]].items() if k not in apart} for g in stacks]
    labels = []
    for label, g in zip(trial_labels(shared), stacks, strict=True):
        if not stack_over:
            members = "seeds=" + "-".join(str(points[j].get("seed", "")) for j in g)
        else:
            members = "+".join(
                ",".join(
                    f"{k.rsplit('.', 1)[-1]}={flat[j][k]}" for k in sorted(apart) if k in flat[j]
                )
                for j in g
            )
        labels.append(f"{label}_{members}"[:100])
    return labels


#: The trials' labels, beside Tune's storage in the study folder (read by `TrialNamer`).
LABELS_FILE = "trial_labels.json"


class TrialNamer:
    """A Tune trial's name (and folder name): its point's or stack's label, or for an Optuna
    draw `optuna_<trial id>`; the labels are read from `LABELS_FILE`.

    Tune pickles its trial name creator into every trial's saved state. A creator holding the
    labels of all N trials made that state grow as N^2: 48 KB a trial at 1,000 trials (the
    experiment state 48 MB; ~7 GB a save projected at 12,600), rewritten at every save.
    This one holds only the file's path: a label never read (the file gone) is the index.
    """

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __call__(self, trial: Any) -> str:
        for key in (POINT, STACK):
            if key in trial.config:
                index = int(trial.config[key])
                labels = _labels(self.path)
                return labels[index] if index < len(labels) else f"{index:03d}"
        return f"optuna_{trial.trial_id}"


def write_labels(path: Path, labels: Sequence[str]) -> TrialNamer:
    """Write `labels` for `TrialNamer` to `path`; the namer that reads them."""
    path.write_text(json.dumps(list(labels)), encoding="utf-8")
    return TrialNamer(path)


def _labels(path: str) -> list[str]:
    try:
        stat = os.stat(path)
        stamp = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        return []
    cached = _LABELS.get(path)
    if cached is None or cached[0] != stamp:  # a study rewritten under the same name
        cached = (stamp, json.loads(Path(path).read_text(encoding="utf-8")))
        _LABELS[path] = cached
    return cached[1]


_LABELS: dict[str, tuple[tuple[int, int], list[str]]] = {}
