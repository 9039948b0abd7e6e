"""What a trial ran with, for its MLflow run: library versions, the code's git commit, the
device, and the identity of the data and split it trained on (a digest of the split's sets).

Pure: no MLflow, no Ray. The trial (`raystudy.trials.common.record_lineage`) writes
`lineage()` as run tags and `data_input()` as an MLflow dataset input through
`raystudy.tracking.trial_run.TrialRun`. Nothing here may fail a trial: what cannot be found out
(git in a package installed from a wheel, a library that is not installed) reads "unknown".

The split digest is computed from what determines the sets, never by enumerating the factor
grid (color_dsprites has 8.8M combinations, finger 2.9 billion): a role whose selector is an
intersection of per-factor conditions *is* its bounding box, so it is hashed as the box (the
same set spelled two ways gets one digest); any other selector (``not``, ``any``, ``random``)
is hashed as its canonical form, with each factor condition replaced by the indices it allows
and the operands of ``all``/``any`` sorted. Equal digests mean equal sets; two spellings of one
set through ``not``/``any`` can still differ.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy.data import Split
from raystudy.data.splits.selectors import COMBINATORS, Selector, bounding_box
from raystudy.tags import (
    DEVICE_TAG,
    GIT_COMMIT_TAG,
    GIT_DIRTY_TAG,
    SOURCE_NAME,
    SOURCE_NAME_TAG,
    version_tag,
)
from raystudy.version import PACKAGE_DIR, git_commit, run_git

UNKNOWN = "unknown"
#: The distributions whose versions a run records (python's own is recorded too).
PACKAGES = ("torch", "ray", "mlflow", "xgboost", "numba", "numpy")
#: Hex characters of the split digest (MLflow's own dataset digests are 8; its column holds 36).
DIGEST_CHARS = 16


def lineage(device: torch.device) -> dict[str, str]:
    """Tag name -> value: versions, git commit and dirty flag, the device's name."""
    return {
        **_versions(),
        **_git(),
        SOURCE_NAME_TAG: SOURCE_NAME,
        DEVICE_TAG: device_name(device),
    }


@functools.cache
def _versions() -> dict[str, str]:
    found = {version_tag("python"): platform.python_version()}
    for package in PACKAGES:
        try:
            found[version_tag(package)] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[version_tag(package)] = UNKNOWN
    return found


@functools.cache
def _git() -> dict[str, str]:
    return git_state(PACKAGE_DIR)


def git_state(here: Path) -> dict[str, str]:
    """The commit of the checkout holding the package folder `here`, and whether its tracked
    files differ from it (untracked files, e.g. a study's output folder, do not count)."""
    commit = git_commit(here)
    if not commit:
        return {GIT_COMMIT_TAG: UNKNOWN, GIT_DIRTY_TAG: UNKNOWN}
    status = run_git(here, "status", "--porcelain", "--untracked-files=no")
    dirty = UNKNOWN if status is None else str(bool(status.strip())).lower()
    return {GIT_COMMIT_TAG: commit, GIT_DIRTY_TAG: dirty}


def device_name(device: torch.device) -> str:
    """The GPU's name for a CUDA device, else the CPU's model."""
    if device.type == "cuda":
        try:
            return torch.cuda.get_device_name(device)
        except Exception:  # a driver that answers is_available() but not this: say so
            return f"cuda ({UNKNOWN} model)"
    return _cpu_model()


@functools.cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or UNKNOWN


@dataclass(frozen=True)
class DataInput:
    """A run's data as MLflow records a dataset: a name, a digest, where it comes from
    (`source`) and what it holds (`profile`), both JSON-able."""

    name: str
    digest: str
    source: dict[str, Any]
    profile: dict[str, Any]


def data_input(
    dataset: str, options: Mapping[str, Any], split_label: str, split: Split
) -> DataInput:
    """The dataset input of a run on `dataset` (with `options`) and `split` (`split_label`:
    the `split` tag, a built-in name or "custom"). One dataset per (dataset and options,
    split); its digest also covers the factor grid, so runs share it only on the same data."""
    space = split.dataset.factors
    source = {"dataset": dataset, "options": dict(options), "split": split_label}
    sets = split_sets(split)
    material = {
        **source,
        "factors": dict(zip(space.names, space.sizes, strict=True)),
        "sets": sets,
    }
    opts = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    name = f"{dataset}({opts})" if opts else dataset
    return DataInput(
        name=f"{name}/{split_label}"[:500],  # MLflow's limit on a dataset's name
        digest=digest(material),
        source=source,
        profile={
            "grid_combinations": space.total,
            "roles": {role: entry.get("domains", ["sim"]) for role, entry in sets.items()},
        },
    )


def digest(material: Any) -> str:
    """sha256 of the canonical JSON of `material`, shortened to `DIGEST_CHARS`."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def split_sets(split: Split) -> dict[str, dict[str, Any]]:
    """Role -> the canonical form of its set (see the module docstring) and, for a
    scenario's sets, the domains they are rendered in."""
    out: dict[str, dict[str, Any]] = {}
    for role in split.roles:
        entry: dict[str, Any] = {"set": canonical_set(split.selector(role), split)}
        scenario, _, side = role.partition("/")
        if side:
            fit, test = split.scenarios[scenario].probe_domains
            entry["domains"] = [fit if side == "train" else test]
        out[role] = entry
    return out


def canonical_set(selector: Selector, split: Split) -> Any:
    """A box as its per-factor allowed indices; otherwise the selector's canonical tree."""
    space = split.dataset.factors
    if _is_box(selector):
        box = bounding_box(selector, space)
        return {
            "box": {n: np.flatnonzero(b).tolist() for n, b in zip(space.names, box, strict=True)}
        }
    return _canonical(selector, split)


def _is_box(selector: Selector) -> bool:
    """Whether `selector` is an intersection of factor conditions (its box is the set)."""
    if not selector:
        return True
    for key, value in selector.items():
        if key == "all":
            if not all(_is_box(sub) for sub in value):
                return False
        elif key in COMBINATORS:
            return False
    return True


def _canonical(selector: Selector, split: Split) -> Any:
    if not selector:
        return "everything"
    space = split.dataset.factors
    terms: list[Any] = []
    for key, value in selector.items():
        if key in ("all", "any"):
            subs = sorted(json.dumps(_canonical(s, split), sort_keys=True) for s in value)
            terms.append({key: subs})
        elif key == "not":
            terms.append({"not": _canonical(value, split)})
        elif key == "random":
            # Spelled-out defaults are the same set as omitted ones.
            terms.append({"random": [value["p"], value.get("seed", 0), value.get("exact", False)]})
        else:
            allowed = bounding_box({key: value}, space)[space.index(key)]
            terms.append({key: np.flatnonzero(allowed).tolist()})
    # The keys of one mapping are an intersection: their order does not matter.
    return sorted(json.dumps(t, sort_keys=True) for t in terms)
