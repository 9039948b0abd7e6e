"""Montero et al.'s questions of "The role of disentanglement in generalisation" (ICLR 2021)
as Findings rows.

Montero et al. 2021 hold combinations of factors out of training (recombination-to-element,
-to-range, extrapolation; Sec. 2) and compare reconstruction NLL on training and held-out
combinations (Fig. 3):

- `HELDOUT_ABOVE_TRAINING`, per cell (dataset and split): the mean over end-to-end trials of
  eval/recon_heldout - eval/recon_train (eval/recon where recon_train is not logged), a paired
  t-test; yes_if '> 0': the held-out combinations are reconstructed worse, a failure to
  generalise (the paper: models generalise in recombination-to-element only, Sec. 2.1-2.2);
- `DIS_LOWERS_HELDOUT`, per cell: rho(D, eval/recon_heldout@<cell>) read from correlations.csv,
  D the Lasso DCI disentanglement `dis/dci_lasso_d` (the paper's, App. A), else `dis/dci_d`;
  group `all`, or `supervision=unsupervised` where ground-truth-decoder trials have both scores
  (Fig. 3 correlates the end-to-end models); yes_if '< 0';
- `DIS_LOWERS_GAP`, per cell of the paper's own conditions: rho(D, relative gap) of the
  end-to-end trials, pooled and with the design held fixed: the "amount of generalisation"
  of the claim of no dependence (`montero2021.dis_no_effect`, tested for equivalence); the row
  above answers no claim, since a raw held-out NLL also moves with how well a model
  reconstructs its training images (in the laptop run, within one beta the seeds with the
  higher D reconstructed training images worse too);
- `GT_HELDOUT_ABOVE_TRAINING`: the first question for the ground-truth decoder's trials
  (objective gt_decoder: the true factors as its code);
- `COMPOSITION_HELDOUT_ABOVE_TRAINING`, per cell: eval/composition_nll_heldout -
  eval/composition_nll of the composition task's trials (Sec. 2.3), Table 1's numbers beside.

Every test but the correlation is of paired differences within a trial: nothing to hold
fixed, so `within` is None.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from raystudy.analysis.core.cells import DATASET, SEPARATOR
from raystudy.analysis.core.columns import (
    COMPOSITION_HELDOUT_NLL,
    COMPOSITION_NLL,
    GBT_D,
    HELDOUT_NLL,
    LASSO_D,
    OBJECTIVE,
    TRAIN_NLL,
    first_present,
    metric,
    short,
)
from raystudy.analysis.core.groups import REFERENCE, SUPERVISION
from raystudy.analysis.findings.montero import (
    ELEMENT,
    EXTRAPOLATION,
    MONTERO2021,
    MONTERO2022,
    MONTERO2022_CITE,
    RANGE,
    kind_text,
    objectives,
    split_kind,
    split_of,
)
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.shared import (
    PaperTables,
    numbers,
    only_value,
    paired_estimate,
    rho_estimates,
    seed_count,
    where_group,
    where_labels,
)
from raystudy.analysis.stats.design import adjusted_spearman
from raystudy.analysis.stats.inference import partial_spearman
from raystudy.analysis.tables.correlations import heldout_nll_targets
from raystudy.analysis.tables.r2 import MONTERO2022_PREFIX

HELDOUT_ABOVE_TRAINING = "heldout_nll_above_training"
DIS_LOWERS_HELDOUT = "disentanglement_lowers_heldout_nll"
GT_HELDOUT_ABOVE_TRAINING = "gt_decoder_heldout_nll_above_training"
COMPOSITION_HELDOUT_ABOVE_TRAINING = "composition_heldout_nll_above_training"

GT_DECODER = "gt_decoder"
_2021 = "Montero et al. 2021"
_NO_NLL = "no NLL in its text, only Fig. 3's plot"
PAPER_HELDOUT_OTHER = (
    f"the paper has no such condition; its models generalise in recombination-to-element only"
    f" ({_2021}, Sec. 3)"
)
PAPER_COMPOSITION_NONE = (
    f"the paper reports the composition task on dSprites' three conditions only ({_2021},"
    " Sec. 2.3, Table 1)"
)


def montero2021_rows(
    frame: pd.DataFrame, correlations: pd.DataFrame, tables: PaperTables, *, min_trials: int
) -> list[dict[str, object]]:
    """Montero et al. 2021's questions (module docstring) that `frame` can answer."""
    objective = objectives(frame)
    end_to_end = ~objective.isin(REFERENCE)
    return [
        *_gap_rows(frame[end_to_end], HELDOUT_ABOVE_TRAINING, min_trials=min_trials),
        *_dis_rows(frame, correlations, min_trials=min_trials),
        *_dis_gap_rows(frame, min_trials=min_trials),
        *_gap_rows(frame[objective == GT_DECODER], GT_HELDOUT_ABOVE_TRAINING, min_trials),
        *_composition_rows(frame, tables.composition, min_trials=min_trials),
    ]


#: The claim a gap row tests, by who is reconstructed and the condition's kind; a condition of
#: Montero et al. 2022's code is a claim of that paper (its finding ii, few combinations
#: excluded) where it has one, else none.
_GAP_CLAIMS = {
    (False, ELEMENT): f"{MONTERO2021}.element_generalises",
    (False, RANGE): f"{MONTERO2021}.range_fails",
    (False, EXTRAPOLATION): f"{MONTERO2021}.extrapolation_fails",
    (True, ELEMENT): f"{MONTERO2021}.gt_decoder_element",
    (True, RANGE): f"{MONTERO2021}.gt_decoder_fails",
    (True, EXTRAPOLATION): f"{MONTERO2021}.gt_decoder_fails",
}
#: The conditions Table 1's composition claim speaks of (on recombination-to-element its
#: held-out NLL is below the training one).
BEYOND = (RANGE, EXTRAPOLATION)
_GAP_CLAIMS_2022 = {(False, ELEMENT): f"{MONTERO2022}.few_excluded_succeed"}
PAPER_2022_GAP = (
    "its abstract speaks of models that fail or succeed, judged by reconstruction, without a"
    f" claim for this condition ({MONTERO2022_CITE}, abstract)"
)


DIS_LOWERS_GAP = "disentanglement_lowers_heldout_gap"
_GAP = "_relative_gap"
PAPER_DIS_RAW = (
    "the paper's claim is of the amount of generalisation, tested on the held-out gap (the"
    " next question); a raw held-out NLL also tracks how well a model reconstructs at all"
    f" ({_2021}, Sec. 2.1)"
)
PAPER_DIS_ELSEWHERE = (
    f"the paper's words are of its own conditions (recombination-to-element, -to-range,"
    f" extrapolation), not of this split ({_2021}, Sec. 2.1)"
)


def _of_2021(split: str) -> bool:
    """A condition of Montero et al. 2021 (not one of the 2022 code's)."""
    return bool(split_kind(split)) and not split.startswith(MONTERO2022_PREFIX)


def relative_gaps(frame: pd.DataFrame) -> pd.Series | None:
    """Each trial's (held-out - training) / training reconstruction NLL (None without both):
    relative, so that one margin of no effect serves every dataset and resolution."""
    train, heldout = first_present(frame, TRAIN_NLL), metric(HELDOUT_NLL)
    if train is None or heldout not in frame.columns:
        return None
    base = numbers(frame, train)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = (numbers(frame, heldout) - base) / base
    return pd.Series(np.where(base > 0, gap, np.nan), index=frame.index)


def _gap_rows(frame: pd.DataFrame, question: str, min_trials: int) -> Iterator[dict]:
    """(Held-out - training) / training reconstruction NLL per trial, t-tested per cell."""
    train = first_present(frame, TRAIN_NLL)
    gap = relative_gaps(frame)
    if gap is None or train is None:
        return
    labels = where_labels(frame)
    gt = question == GT_HELDOUT_ABOVE_TRAINING
    for label in sorted(labels[np.isfinite(gap)].unique()):
        trials = frame[(labels == label) & np.isfinite(gap)]
        if len(trials) < min_trials:
            continue
        split = split_of(trials)
        kind = split_kind(split)
        where = kind_text(split, label)
        if gt:
            text = (
                f"Does the ground-truth decoder reconstruct held-out combinations worse ({where})?"
            )
        else:
            text = f"Do the models reconstruct held-out combinations worse ({where})?"
        later = split.startswith(MONTERO2022_PREFIX)
        claimed = (_GAP_CLAIMS_2022 if later else _GAP_CLAIMS).get((gt, kind))
        paper = PAPER_2022_GAP if later else PAPER_HELDOUT_OTHER
        who = f"{OBJECTIVE.removeprefix('params.')}={GT_DECODER}" if gt else "end-to-end models"
        yield finding_row(
            MONTERO2022 if later else MONTERO2021,
            question,
            text,
            "relative_gap",
            "> 0",
            "" if claimed else paper,
            x=f"({HELDOUT_NLL} - {short(train)}) / {short(train)}",
            y="reconstruction NLL",
            group=f"{where_group(frame, label)}; {who}",
            pooled=paired_estimate(gap[trials.index].to_numpy()),
            n_seeds=seed_count(trials),
            claim_id=claimed,
        )


def _dis_rows(
    frame: pd.DataFrame, correlations: pd.DataFrame, *, min_trials: int
) -> Iterator[dict]:
    """rho(D, held-out NLL) per cell, from correlations.csv's row (Lasso D first)."""
    targets = heldout_nll_targets(frame)
    if targets.columns.empty or correlations.empty:
        return
    reference = objectives(frame).isin(REFERENCE)
    for target in targets.columns:
        y = short(target)
        cell = y.split(SEPARATOR, 1)[1] if SEPARATOR in y else ""
        for name in (LASSO_D, GBT_D):
            x = metric(name)
            if x not in frame.columns:
                continue
            both = np.isfinite(numbers(frame, x)) & np.isfinite(targets[target].to_numpy(float))
            mixed = (both & reference.to_numpy()).any() and SUPERVISION in frame.columns
            group = f"{SUPERVISION}=unsupervised" if mixed else "all"
            rows = correlations[
                (correlations["x"] == name)
                & (correlations["y"] == y)
                & (correlations["group"] == group)
            ]
            rows = rows[np.isfinite(rows["rho"].astype("float64")) & (rows["n"] >= min_trials)]
            if rows.empty:
                continue
            row = rows.iloc[0]
            if group != "all":
                both &= (frame[SUPERVISION] == "unsupervised").to_numpy()
            trials = frame[both].assign(**{target: targets.loc[both, target]})
            pooled, within = rho_estimates(row, adjusted_spearman(trials, x, target))
            split = split_of(trials)
            where = kind_text(split, cell)
            note = "" if name == LASSO_D else f" ({name}: no {LASSO_D} logged)"
            yield finding_row(
                MONTERO2021,
                DIS_LOWERS_HELDOUT,
                f"Does higher disentanglement{note} go with a lower held-out NLL"
                f"{f' ({where})' if where else ''}?",
                "rho",
                "< 0",
                PAPER_DIS_RAW if _of_2021(split) else PAPER_DIS_ELSEWHERE,
                x=name,
                y=y,
                group=group,
                pooled=pooled,
                within=within,
                n_seeds=seed_count(trials),
            )
            break


def _dis_gap_rows(frame: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    """rho(D, relative gap) per cell of the 2021 paper's conditions, end-to-end models, with
    the design held fixed: the amount of generalisation the claim speaks of."""
    gaps = relative_gaps(frame)
    name = next((n for n in (LASSO_D, GBT_D) if metric(n) in frame.columns), None)
    if gaps is None or name is None:
        return
    x = metric(name)
    labels = where_labels(frame)
    usable = np.isfinite(numbers(frame, x)) & np.isfinite(gaps.to_numpy())
    usable &= ~objectives(frame).isin(REFERENCE).to_numpy()
    for label in sorted(labels[usable].unique()):
        trials = frame[usable & (labels == label).to_numpy()]
        split = split_of(trials)
        if len(trials) < min_trials or not _of_2021(split):
            continue
        scored = trials.assign(**{_GAP: gaps[trials.index]})
        within = adjusted_spearman(scored, x, _GAP)
        pooled = partial_spearman(
            numbers(scored, x), numbers(scored, _GAP), np.empty((len(scored), 0))
        )
        note = "" if name == LASSO_D else f" ({name}: no {LASSO_D} logged)"
        yield finding_row(
            MONTERO2021,
            DIS_LOWERS_GAP,
            f"Does higher disentanglement{note} go with a smaller held-out gap"
            f" ({kind_text(split, label)})?",
            "rho",
            "< 0",
            "",
            x=name,
            y="(held-out - training) / training reconstruction NLL",
            group=f"{where_group(frame, label)}; end-to-end models",
            pooled=pooled,
            within=within,
            n_seeds=seed_count(trials),
            claim_id=f"{MONTERO2021}.dis_no_effect",
        )


def _composition_rows(
    frame: pd.DataFrame, table: pd.DataFrame, *, min_trials: int
) -> Iterator[dict]:
    """The composition task's held-out minus training target NLL per trial, per cell."""
    train, heldout = metric(COMPOSITION_NLL), metric(COMPOSITION_HELDOUT_NLL)
    if train not in frame.columns or heldout not in frame.columns:
        return
    gap = pd.Series(numbers(frame, heldout) - numbers(frame, train), index=frame.index)
    labels = where_labels(frame)
    for label in sorted(labels[np.isfinite(gap)].unique()):
        trials = frame[(labels == label) & np.isfinite(gap)]
        if len(trials) < min_trials:
            continue
        split = split_of(trials)
        where = kind_text(split, label)
        yield finding_row(
            MONTERO2021,
            COMPOSITION_HELDOUT_ABOVE_TRAINING,
            f"Does the composition model get held-out targets worse than training ones ({where})?",
            "difference",
            "> 0",
            _paper_composition(table, split, only_value(trials, DATASET)),
            x=f"{COMPOSITION_HELDOUT_NLL} - {COMPOSITION_NLL}",
            y="composition target NLL",
            group=where_group(frame, label),
            pooled=paired_estimate(gap[trials.index].to_numpy()),
            n_seeds=seed_count(trials),
            claim_id=f"{MONTERO2021}.composition_fails" if split_kind(split) in BEYOND else None,
        )


def _paper_composition(table: pd.DataFrame, condition: str, dataset: str) -> str:
    """Table 1's NLLs of a condition (dSprites only), from composition.csv's paper columns."""
    if table.empty or "paper_nll_train" not in table.columns:
        return PAPER_COMPOSITION_NONE
    rows = table[(table["condition"] == condition) & (table["dataset"] == dataset)]
    rows = rows[np.isfinite(rows["paper_nll_train"].astype("float64"))]
    if rows.empty:
        return PAPER_COMPOSITION_NONE
    train, test = float(rows["paper_nll_train"].iloc[0]), float(rows["paper_nll_heldout"].iloc[0])
    answer = "yes" if test > train else "no"
    return (
        f"{answer}: NLL {test:.2f} on test against {train:.2f} on training, a difference of"
        f" {test - train:+.2f} ({_2021}, Sec. 2.3, Table 1, dSprites; no seed count or spread)"
    )
