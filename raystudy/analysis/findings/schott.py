"""Schott et al.'s questions as Findings rows ("Visual representation learning does not
generalize strongly within the same domain", ICLR 2022).

The paper regresses every factor from each model's representation with readouts fit on a
split's training set and scores them by R^2 (against the full grid's variance) on its test set:
random, composition, interpolation and extrapolation splits (abstract). Here, from the finished
trials of `schott_*` splits, `transfer/test/<probe>/r2` (the mean over factors):

- `R2_DROPS`, per model (`groups.model_labels`), readout and kind of split: R^2(random) -
  R^2(kind), a difference of trial means (Welch's t-test), and with the design that varies
  among that model's trials (dataset) held fixed (`design.adjusted_difference`); yes_if '> 0';
- `SUPERVISION_SHRINKS_DROP`, per readout and kind, for weakly supervised (Ada-GVAE, ML-VAE,
  SlowVAE, PCL) and supervised models (objectives `supervised`, `supervised_pretrained`)
  against unsupervised ones: drop(unsupervised)
  - drop(group), the coefficient of kind x group in an OLS of R^2 on an intercept, kind (1 on
  the kind's split, 0 on random), group (1 for the group, 0 for unsupervised) and their
  product: y = b0 + b1 K + b2 G + b3 K G, so drop(unsupervised) = -b1, drop(group) =
  -(b1 + b3) and b3 is their difference (t-test); with the other design factors (objective,
  hyperparameters, dataset) held fixed as additive dummies; yes_if '> 0' (supervision closes
  part of the gap);
- `OTHERS_STAY_PREDICTABLE`, per split and readout, from r2_modularity.csv: in each
  `single_<factor>` scenario (one factor out of distribution), the other factors' mean R^2
  minus the OOD factor's, each a seed mean per model and dataset, t-tested over the table's
  rows; yes_if '> 0'.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from raystudy.analysis.core.columns import OBJECTIVE, SPLIT
from raystudy.analysis.core.groups import SUPERVISED, SUPERVISION, model_labels, natural_order
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.shared import (
    PaperTables,
    held_fixed_coefficient,
    paired_estimate,
    seed_count,
    split_columns,
    test_r2,
    two_group_difference,
)
from raystudy.analysis.stats.design import Adjusted, design_factors
from raystudy.analysis.stats.inference import Estimate
from raystudy.analysis.tables.r2 import SCHOTT_PREFIX, split_kind
from raystudy.keys import transfer_key

SCHOTT2022 = "schott2022"
R2_DROPS = "r2_drops_from_random_split"
SUPERVISION_SHRINKS_DROP = "supervision_shrinks_r2_drop"
OTHERS_STAY_PREDICTABLE = "other_factors_stay_predictable"
RANDOM = "random"
KINDS = ("composition", "interpolation", "extrapolation")
#: The model groups compared with unsupervised ones: (name, how the question says it, how
#: the row's group names it).
GROUPS = (
    ("weak", "weak supervision", f"{SUPERVISION}=weak"),
    (
        "supervised",
        "full supervision",
        f"{OBJECTIVE.removeprefix('params.')} in ({', '.join(sorted(SUPERVISED))})",
    ),
)

_S = "Schott et al. 2022"
PAPER_SUPERVISION = (
    "the paper does not say: its abstract has every model struggle 'regardless of supervision"
    " signal and architectural bias' (tested as each model's own drop), not whether supervision"
    f" shrinks the drop ({_S}, abstract)"
)
#: The R^2 questions asked of the trials: (question, statistic, the paper's answer).
_DROP = (R2_DROPS, "r2_drop", "")
_SHRINK = (SUPERVISION_SHRINKS_DROP, "drop_difference", PAPER_SUPERVISION)


def schott_rows(
    frame: pd.DataFrame, tables: PaperTables, *, min_trials: int
) -> list[dict[str, object]]:
    """Schott et al. 2022's questions (module docstring) that `frame` and the tables answer."""
    runs = _runs(frame)
    rows: list[dict[str, object]] = []
    if not runs.empty:
        scores = test_r2(runs)
        rows += _drop_rows(runs, scores, min_trials=min_trials)
        rows += _supervision_rows(runs, scores, min_trials=min_trials)
    rows += _modularity_rows(frame, tables.r2_modularity, min_trials=min_trials)
    return rows


def _runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The trials of Schott et al.'s splits, with their `model` and `kind`."""
    if SPLIT not in frame.columns:
        return pd.DataFrame()
    runs = frame[frame[SPLIT].astype(str).str.startswith(SCHOTT_PREFIX, na=False)]
    if runs.empty:
        return pd.DataFrame()
    return runs.assign(model=model_labels(runs), kind=split_kind(runs[SPLIT]))


def _drop_rows(
    runs: pd.DataFrame, scores: dict[str, pd.Series], *, min_trials: int
) -> Iterator[dict]:
    """R^2(random) - R^2(kind) per model, readout and kind."""
    for probe, r2 in sorted(scores.items()):
        for model in natural_order(runs["model"]):
            for kind in KINDS:
                keep = (runs["model"] == model) & runs["kind"].isin([RANDOM, kind])
                keep &= np.isfinite(r2)
                sub = runs[keep]
                flag = (sub["kind"] == RANDOM).to_numpy()
                if min(flag.sum(), (~flag).sum()) < min_trials:
                    continue
                values = r2[keep].to_numpy()
                pooled, within = two_group_difference(sub, values, flag, split_columns(sub))
                text = f"Does {model}'s R^2 drop from the random split to {kind} ({probe} readout)?"
                x = f"{SCHOTT_PREFIX}{RANDOM} - {SCHOTT_PREFIX}{kind}"
                yield _r2_row(
                    _DROP,
                    text,
                    x,
                    f"model={model}",
                    probe,
                    sub,
                    flag,
                    (pooled, within),
                    claim_id=f"{SCHOTT2022}.struggle_{kind}",
                )


def _supervision_rows(
    runs: pd.DataFrame, scores: dict[str, pd.Series], *, min_trials: int
) -> Iterator[dict]:
    """drop(unsupervised) - drop(group): the kind x group coefficient of an OLS of R^2."""
    if SUPERVISION not in runs.columns:
        return
    objectives = runs[OBJECTIVE].astype(str) if OBJECTIVE in runs.columns else runs["model"]
    unsupervised = runs[SUPERVISION] == "unsupervised"
    members = {"weak": runs[SUPERVISION] == "weak", "supervised": objectives.isin(SUPERVISED)}
    for probe, r2 in sorted(scores.items()):
        for kind in KINDS:
            for name, said, label in GROUPS:
                keep = runs["kind"].isin([RANDOM, kind]) & (members[name] | unsupervised)
                keep &= np.isfinite(r2)
                sub = runs[keep]
                shifted = (sub["kind"] == kind).to_numpy()
                group = members[name][keep].to_numpy()
                cells = [(shifted == s) & (group == g) for s in (0, 1) for g in (0, 1)]
                if min(int(c.sum()) for c in cells) < min_trials:
                    continue
                base = np.column_stack([shifted, group, shifted & group]).astype(np.float64)
                excluded = {*split_columns(sub), SUPERVISION}
                factors = [f for f in design_factors(sub) if f not in excluded]
                pooled, within = held_fixed_coefficient(sub, r2[keep].to_numpy(), base, factors)
                text = (
                    f"Does {said} shrink the R^2 drop from the random split to {kind}"
                    f" ({probe} readout)?"
                )
                x = f"drop(unsupervised) - drop({name})"
                where = f"{label}, {SUPERVISION}=unsupervised"
                yield _r2_row(_SHRINK, text, x, where, probe, sub, group, (pooled, within))


def _r2_row(
    question: tuple[str, str, str],
    text: str,
    x: str,
    group: str,
    probe: str,
    trials: pd.DataFrame,
    sides: NDArray[np.bool_],
    estimates: tuple[Estimate, Adjusted],
    claim_id: str | None = None,
) -> dict[str, object]:
    """The row of an R^2 `question` (`_DROP`, `_SHRINK`) asked of `trials`, `probe` readout:
    `sides` marks the trials of the first of the two sides compared; `estimates` the pooled
    statistic and the one with the design held fixed."""
    name, statistic, paper = question
    pooled, within = estimates
    return finding_row(
        SCHOTT2022,
        name,
        text,
        statistic,
        "> 0",
        "" if claim_id else paper,
        x=x,
        y=transfer_key("test", probe, "r2"),
        group=group,
        pooled=pooled,
        n_text=f"{int(sides.sum())} + {int((~sides).sum())}",
        within=within,
        n_seeds=seed_count(trials),
        claim_id=claim_id,
    )


def _modularity_rows(
    frame: pd.DataFrame, table: pd.DataFrame, *, min_trials: int
) -> Iterator[dict]:
    """Others' mean R^2 minus the OOD factor's, per split and readout, over the table's rows."""
    if table.empty:
        return
    rows = table[table["split"].astype(str).str.startswith(SCHOTT_PREFIX)]
    diff = rows["others_r2"].astype("float64") - rows["ood_r2"].astype("float64")
    rows = rows.assign(_diff=diff)[np.isfinite(diff)]
    for (split, probe), sub in rows.groupby(["split", "probe"], sort=True):
        if len(sub) < min_trials:
            continue
        trials = frame[frame[SPLIT].astype(str) == split] if SPLIT in frame.columns else frame
        kind = str(split).removeprefix(SCHOTT_PREFIX)
        yield finding_row(
            SCHOTT2022,
            OTHERS_STAY_PREDICTABLE,
            "Do the other factors stay more predictable than the one out of distribution"
            f" ({kind}, {probe} readout)?",
            "r2_difference",
            "> 0",
            "",
            x="others_r2 - ood_r2",
            y=transfer_key("single_<factor>", probe, "r2"),
            group=f"split={split}",
            pooled=paired_estimate(sub["_diff"].to_numpy()),
            n_text=f"{len(sub)} model x dataset x factor means, {int(sub['n'].sum())} runs",
            n_seeds=seed_count(trials),
            claim_id=f"{SCHOTT2022}.modular",
        )
