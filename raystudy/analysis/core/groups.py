"""Which trials are analysed together: all of them, one supervision type, one axis value.

Dittadi et al. (2021) report every correlation separately for unsupervised and weakly
supervised models (Figs. 3, 5, 13), because weak supervision moves both disentanglement and
transfer; reference models (a supervised encoder, the ground-truth decoder of Montero et al.
2021) are the ceiling the others are compared with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import pandas as pd

from raystudy.analysis.core.cells import CELL, DATASET
from raystudy.analysis.core.columns import OBJECTIVE, PARAM, SPLIT
from raystudy.analysis.core.errors import AnalysisError
from raystudy.tags import EXTERNAL_ROLE, ROLE_TAG
from raystudy.tags import column as tag_column

#: Trained on pairs that share some factors (Locatello et al. 2020; SlowVAE and PCL on
#: temporally close pairs, which Schott et al. 2022 count as weakly supervised).
WEAK = frozenset({"ada_gvae", "ml_vae", "slow_vae", "pcl"})
#: Encoders trained on the factors themselves (from scratch or from ImageNet weights).
SUPERVISED = frozenset({"supervised", "supervised_pretrained"})
REFERENCE = SUPERVISED | {"gt_decoder"}
#: Encoders raystudy did not train (`raystudy evaluate --experiment`): a group of their own.
EXTERNAL = "external"
SUPERVISION_ORDER = ("unsupervised", "weak", "reference", EXTERNAL)
SUPERVISION = "supervision"
#: Named sets of trials, as `trial_groups` gives them: (group name, the trials' row labels).
Groups = Sequence[tuple[str, pd.Index]]

#: Short names a user may pass to `--by` for the usual grid axes.
AXIS_ALIASES = {
    "model": "model.objective",
    "objective": "model.objective",
    "noise": "train.input_noise",
    "dataset": "dataset.name",
}


#: Params that never tell two models apart: the seed is what a model is repeated over, the
#: split and the dataset are the cells a model is compared within, and a model's size and
#: cost follow from its config.
_NOT_MODEL = (
    PARAM + "seed",
    DATASET,
    PARAM + "model.num_params",
    PARAM + "model.flops_per_step",
)


class AxisError(AnalysisError):
    """A `--by` axis that names no parameter of the study; the message lists the choices."""


def supervision(objective: object) -> str:
    """'weak', 'reference' or 'unsupervised' (any other objective, or none recorded)."""
    if objective in WEAK:
        return "weak"
    if objective in REFERENCE:
        return "reference"
    return "unsupervised"


def with_supervision(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy with a `supervision` column derived from `params.model.objective`, `external`
    for a run tagged `raystudy.role = external`."""
    objectives = frame[OBJECTIVE] if OBJECTIVE in frame.columns else pd.Series(None, frame.index)
    kinds = objectives.map(supervision)
    role = tag_column(ROLE_TAG)
    if role in frame.columns:
        kinds = kinds.where(frame[role] != EXTERNAL_ROLE, EXTERNAL)
    return frame.assign(**{SUPERVISION: kinds})


def varying_params(frame: pd.DataFrame) -> list[str]:
    """Parameter keys (without `params.`) that take more than one value across trials."""
    return sorted(
        c.removeprefix(PARAM)
        for c in frame.columns
        if c.startswith(PARAM) and frame[c].astype(str).nunique() > 1
    )


def resolve_axis(frame: pd.DataFrame, axis: str) -> str:
    """The `params.*` column `axis` names: a full key (`model.beta`), an alias (`model`), or
    the last part of exactly one key (`beta`)."""
    key = AXIS_ALIASES.get(axis, axis)
    if PARAM + key in frame.columns:
        return PARAM + key
    matches = [c for c in frame.columns if c.startswith(PARAM) and c.rsplit(".", 1)[-1] == axis]
    if len(matches) == 1:
        return matches[0]
    varying = ", ".join(varying_params(frame)) or "none"
    why = f"matches {len(matches)} parameters" if matches else "names no parameter"
    raise AxisError(f"--by {axis!r} {why} of this study; parameters that vary: {varying}")


def trial_groups(frame: pd.DataFrame, by: Iterable[str] = ()) -> list[tuple[str, pd.Index]]:
    """(group name, row labels) for `all`, each supervision type present, each cell of a
    study over several datasets or splits (`cell=<name>`, see `raystudy.analysis.core.cells`),
    and each value of each `by` axis (`<param key>=<value>`), in that order. `frame` needs
    `supervision`. Axes that name the same parameter (`model`, `objective`) count once."""
    groups: list[tuple[str, pd.Index]] = [("all", frame.index)]
    if SUPERVISION in frame.columns:
        for kind in SUPERVISION_ORDER:
            rows = frame.index[frame[SUPERVISION] == kind]
            if len(rows):
                groups.append((f"{SUPERVISION}={kind}", rows))
    if CELL in frame.columns:
        for cell in sorted(frame[CELL].dropna().unique()):
            groups.append((f"{CELL}={cell}", frame.index[frame[CELL] == cell]))
    for column in dict.fromkeys(resolve_axis(frame, axis) for axis in by):
        # A run without the parameter (a factor_vae has no beta) belongs to no value's group.
        values = frame[column][frame[column].notna()].astype(str)
        for value in sorted(values.unique()):
            groups.append((f"{column.removeprefix(PARAM)}={value}", values.index[values == value]))
    return groups


def model_labels(frame: pd.DataFrame) -> pd.Series:
    """Each trial's model: its objective and every other parameter that varies across
    `frame`, except the seed, the split and the dataset (`beta_vae beta=4.0`).

    Trials with one label differ only in seed, split or dataset, so a mean over one label's
    trials of one split and dataset is a mean over seeds (Schott et al. 2022 report R^2 so).
    A parameter a trial does not have (a factor_vae has no beta) is left out of its label.
    """
    if OBJECTIVE in frame.columns:
        labels = frame[OBJECTIVE].astype(str)
    else:
        labels = pd.Series("model", index=frame.index, dtype=object)
    for key in varying_params(frame):
        column = PARAM + key
        if column in (*_NOT_MODEL, OBJECTIVE) or column.startswith(SPLIT):
            continue
        values = frame[column]
        shown = key.removeprefix("model.")
        labels = labels.where(values.isna(), labels + f" {shown}=" + values.astype(str))
    return labels.rename("model")


def natural_order(names: Iterable[str]) -> list[str]:
    """Distinct names sorted with their numbers compared as numbers (`beta=4.0` before
    `beta=16.0`), so models read in the order of their hyperparameters."""
    # re.split with a group alternates text (even places) and numbers (odd places).
    return sorted(
        set(names),
        key=lambda name: [
            float(part) if i % 2 else part
            for i, part in enumerate(re.split(r"(\d+(?:\.\d+)?)", name))
        ],
    )
