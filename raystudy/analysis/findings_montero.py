"""Montero et al.'s questions as Findings rows: "The role of disentanglement in generalisation"
(ICLR 2021) and "Lost in Latent Space" (NeurIPS 2022). Both papers' questions stay in one
module (~440 lines) because they read one table of conditions (`SPLIT_KINDS`: each split's
kind, element / range / extrapolation) and say it the same way.

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
- `GT_HELDOUT_ABOVE_TRAINING`: the first question for the ground-truth decoder's trials
  (objective gt_decoder: the true factors as its code);
- `COMPOSITION_HELDOUT_ABOVE_TRAINING`, per cell: eval/composition_nll_heldout -
  eval/composition_nll of the composition task's trials (Sec. 2.3), Table 1's numbers beside.

Montero et al. 2022 ask whether a failure on held-out combinations is the decoder's or the
encoder's (abstract):

- `RETRAINED_DECODER_LOWERS_HELDOUT`, per split and dataset of decoder_test.csv: the held-out
  NLL after minus before the decoder was retrained on the frozen encoder's codes, each model's
  seed means (`decoder_test_table`) paired, a t-test over end-to-end models; yes_if '< 0': the
  retrained decoder renders the held-out combinations better, so the decoder had failed;
- `ENCODER_R2_FALLS`, per montero2022_* split of the recombination-to-range or extrapolation
  kind and readout: R^2(recombination-to-element) - R^2(split) of readouts fit on training
  combinations and scored on held-out ones (r2_table.csv, seed means), paired per model and
  dataset, a t-test; yes_if '> 0'. A montero2022 split logs no in-distribution R^2 (its one
  probe scenario, `test`, is the held-out set), so the reference is recombination-to-element,
  where the paper finds models succeed (finding ii).

Every test is of paired differences within a trial or a model: nothing to hold fixed, so
`within` is None for all but the correlation.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from raystudy.analysis.cells import DATASET, SEPARATOR
from raystudy.analysis.columns import (
    COMPOSITION_HELDOUT_NLL,
    COMPOSITION_NLL,
    DECODER_TEST_HELDOUT_NLL,
    GBT_D,
    HELDOUT_NLL,
    LASSO_D,
    OBJECTIVE,
    SPLIT,
    TRAIN_NLL,
    first_present,
    metric,
    short,
)
from raystudy.analysis.correlations import heldout_nll_targets
from raystudy.analysis.design import adjusted_spearman
from raystudy.analysis.finding_rows import finding_row
from raystudy.analysis.findings_shared import (
    PaperTables,
    numbers,
    paired_estimate,
    rho_estimates,
    seed_count,
    split_of,
    where_group,
    where_labels,
)
from raystudy.analysis.groups import REFERENCE, SUPERVISION
from raystudy.analysis.r2_table import MONTERO2022_PREFIX
from raystudy.data.splits.papers.montero2021 import VARIANT_KINDS
from raystudy.keys import transfer_key

MONTERO2021 = "montero2021"
MONTERO2022 = "montero2022"
HELDOUT_ABOVE_TRAINING = "heldout_nll_above_training"
DIS_LOWERS_HELDOUT = "disentanglement_lowers_heldout_nll"
GT_HELDOUT_ABOVE_TRAINING = "gt_decoder_heldout_nll_above_training"
COMPOSITION_HELDOUT_ABOVE_TRAINING = "composition_heldout_nll_above_training"
RETRAINED_DECODER_LOWERS_HELDOUT = "retrained_decoder_lowers_heldout_nll"
ENCODER_R2_FALLS = "encoder_r2_falls_beyond_element"

GT_DECODER = "gt_decoder"
ELEMENT, RANGE, EXTRAPOLATION = (
    "recombination-to-element",
    "recombination-to-range",
    "extrapolation",
)
#: The 2022 code's interpolation conditions (held-out hue values between training ones).
INTERPOLATION = "interpolation"
#: Each split of Montero et al.'s conditions and its kind (raystudy.data.splits.papers:
#: montero2021, the 2021 splits; montero2022, the 2022 paper's conditions, bracketed by family).
SPLIT_KINDS: dict[str, str] = {
    "montero_element": ELEMENT,
    "montero_range": RANGE,
    "montero_extrapolation": EXTRAPOLATION,
    # every condition of the 2021 code (raystudy.data.splits.papers.montero2021.VARIANT_KINDS)
    **{
        f"montero2021_{name}": {"element": ELEMENT, "range": RANGE}.get(kind, EXTRAPOLATION)
        for name, kind in VARIANT_KINDS.items()
    },
    **{
        MONTERO2022_PREFIX + name: kind
        for kind, names in (
            (ELEMENT, ("loo", "r2e", "shape2ohue_r2e")),
            (
                RANGE,
                (
                    "r2r",
                    "shape2tx",
                    "shape2ohue",
                    "shape2ohueq",
                    "fhue2whue",
                    "ohue2whue",
                    "cyl2horz",
                    "objc2horz",
                    "midpos",
                    "shape2px",
                    # the code's further variants (raystudy.data.splits.papers.montero2022_variants)
                    "ell2tx",
                    "sqr2scl",
                    "sqr2tx_cent",
                    "sqr2tx_flnk",
                    "sqr2tx_rs",
                    "sqr2tx_ls",
                    "shape2fhue",
                    "shape2orient",
                    "shape2ohue_flnk",
                    "cyl2vx",
                    "bkg2cyl",
                ),
            ),
            (EXTRAPOLATION, ("extrp", "blank_side", "fhue_gt50", "horz_gt20", "objc_gt3")),
            (INTERPOLATION, ("odd_ohue", "odd_wnf_hue")),
        )
        for name in names
    },
}

_2021 = "Montero et al. 2021"
_NO_NLL = "no NLL in its text, only Fig. 3's plot"
#: Sec. 2.1 (dSprites), 2.2 (3D Shapes) and 3 (Discussion), Fig. 3.
PAPER_HELDOUT = {
    ELEMENT: (
        f"no: every model reconstructed the held-out combinations ({_2021}, Sec. 2.1-2.2,"
        f" Fig. 3; {_NO_NLL})"
    ),
    RANGE: f"yes: every model failed ({_2021}, Sec. 2.1-2.2, Fig. 3; {_NO_NLL})",
    EXTRAPOLATION: f"yes: every model failed ({_2021}, Sec. 2.1-2.2, Fig. 3; {_NO_NLL})",
}
PAPER_HELDOUT_OTHER = (
    f"the paper has no such condition; its models generalise in recombination-to-element only"
    f" ({_2021}, Sec. 3)"
)
PAPER_DIS = (
    f"no: the amount of generalisation did not depend on the degree of disentanglement"
    f" ({_2021}, Sec. 2.1; no correlation on 3D Shapes either, Sec. 2.2; Fig. 3); no number in"
    " its text"
)
PAPER_GT = {
    ELEMENT: (
        "no: perfectly disentangled codes were as successful as the end-to-end models at"
        f" recombination-to-element ({_2021}, Sec. 3; {_NO_NLL})"
    ),
    RANGE: (
        "yes: with a lower NLL than the end-to-end models, the GT decoder still failed to"
        f" reconstruct the held-out combinations ({_2021}, Sec. 2.1-2.2, Fig. 3; {_NO_NLL})"
    ),
    EXTRAPOLATION: (
        "yes: perfectly disentangled codes failed at extrapolation too; 'less affected, yet ... it"
        f" fails to generalize' ({_2021}, Sec. 3, Fig. 3 caption; {_NO_NLL})"
    ),
}
PAPER_COMPOSITION_NONE = (
    f"the paper reports the composition task on dSprites' three conditions only ({_2021},"
    " Sec. 2.3, Table 1)"
)
_2022 = "Montero et al. 2022"
_NO_NUMBER_2022 = "no number quoted here (the abstract gives none)"
PAPER_DECODER = (
    "no: when models fail, their encoders also fail to map the unseen combinations to the right"
    f" regions of the latent space ({_2022}, abstract, finding i); {_NO_NUMBER_2022}"
)
PAPER_ENCODER = (
    "yes: where models fail, their encoders map unseen combinations to the wrong regions; where"
    " they succeed, the condition excludes few combinations or combines properties with shape"
    f" ({_2022}, abstract, findings i-ii); {_NO_NUMBER_2022}, nor an R^2 threshold"
)


def split_kind(split: str) -> str:
    """Montero et al.'s kind of a split, '' for any other split."""
    return SPLIT_KINDS.get(split, "")


def _kind_text(kind: str, split: str, where: str) -> str:
    parts = [p for p in (kind, split if split and split not in where else "", where) if p]
    return ", ".join(dict.fromkeys(parts))


def _objectives(frame: pd.DataFrame) -> pd.Series:
    if OBJECTIVE not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[OBJECTIVE].astype(str)


def montero2021_rows(
    frame: pd.DataFrame, correlations: pd.DataFrame, tables: PaperTables, *, min_trials: int
) -> list[dict[str, object]]:
    """Montero et al. 2021's questions (module docstring) that `frame` can answer."""
    objectives = _objectives(frame)
    end_to_end = ~objectives.isin(REFERENCE)
    return [
        *_gap_rows(frame[end_to_end], HELDOUT_ABOVE_TRAINING, min_trials=min_trials),
        *_dis_rows(frame, correlations, min_trials=min_trials),
        *_gap_rows(frame[objectives == GT_DECODER], GT_HELDOUT_ABOVE_TRAINING, min_trials),
        *_composition_rows(frame, tables.composition, min_trials=min_trials),
    ]


def _gap_rows(frame: pd.DataFrame, question: str, min_trials: int) -> Iterator[dict]:
    """Held-out minus training reconstruction NLL per trial, t-tested per cell."""
    train, heldout = first_present(frame, TRAIN_NLL), metric(HELDOUT_NLL)
    if train is None or heldout not in frame.columns:
        return
    gap = pd.Series(numbers(frame, heldout) - numbers(frame, train), index=frame.index)
    labels = where_labels(frame)
    gt = question == GT_HELDOUT_ABOVE_TRAINING
    for label in sorted(labels[np.isfinite(gap)].unique()):
        trials = frame[(labels == label) & np.isfinite(gap)]
        if len(trials) < min_trials:
            continue
        split = split_of(trials)
        kind = split_kind(split)
        where = _kind_text(kind, split, label)
        if gt:
            text = (
                f"Does the ground-truth decoder reconstruct held-out combinations worse ({where})?"
            )
            paper = PAPER_GT.get(kind, PAPER_HELDOUT_OTHER)
        else:
            text = f"Do the models reconstruct held-out combinations worse ({where})?"
            paper = PAPER_HELDOUT.get(kind, PAPER_HELDOUT_OTHER)
        who = f"{OBJECTIVE.removeprefix('params.')}={GT_DECODER}" if gt else "end-to-end models"
        yield finding_row(
            MONTERO2021,
            question,
            text,
            "difference",
            "> 0",
            paper,
            x=f"{HELDOUT_NLL} - {short(train)}",
            y="reconstruction NLL",
            group=f"{where_group(frame, label)}; {who}",
            pooled=paired_estimate(gap[trials.index].to_numpy()),
            n_seeds=seed_count(trials),
        )


def _dis_rows(
    frame: pd.DataFrame, correlations: pd.DataFrame, *, min_trials: int
) -> Iterator[dict]:
    """rho(D, held-out NLL) per cell, from correlations.csv's row (Lasso D first)."""
    targets = heldout_nll_targets(frame)
    if targets.columns.empty or correlations.empty:
        return
    reference = _objectives(frame).isin(REFERENCE)
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
            where = _kind_text(split_kind(split), split, cell)
            note = "" if name == LASSO_D else f" ({name}: no {LASSO_D} logged)"
            yield finding_row(
                MONTERO2021,
                DIS_LOWERS_HELDOUT,
                f"Does higher disentanglement{note} go with a lower held-out NLL"
                f"{f' ({where})' if where else ''}?",
                "rho",
                "< 0",
                PAPER_DIS,
                x=name,
                y=y,
                group=group,
                pooled=pooled,
                within=within,
                n_seeds=seed_count(trials),
            )
            break


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
        where = _kind_text(split_kind(split), split, label)
        yield finding_row(
            MONTERO2021,
            COMPOSITION_HELDOUT_ABOVE_TRAINING,
            f"Does the composition model get held-out targets worse than training ones ({where})?",
            "difference",
            "> 0",
            _paper_composition(table, split, _dataset_of(trials)),
            x=f"{COMPOSITION_HELDOUT_NLL} - {COMPOSITION_NLL}",
            y="composition target NLL",
            group=where_group(frame, label),
            pooled=paired_estimate(gap[trials.index].to_numpy()),
            n_seeds=seed_count(trials),
        )


def _dataset_of(frame: pd.DataFrame) -> str:
    if DATASET not in frame.columns:
        return ""
    names = frame[DATASET].dropna().astype(str).unique()
    return str(names[0]) if len(names) == 1 else ""


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


def montero2022_rows(
    frame: pd.DataFrame, tables: PaperTables, *, min_trials: int
) -> list[dict[str, object]]:
    """Montero et al. 2022's questions (module docstring) that the tables can answer."""
    return [
        *_decoder_rows(frame, tables.decoder_test, min_trials=min_trials),
        *_encoder_rows(frame, tables.r2, min_trials=min_trials),
    ]


def _model_objective(models: pd.Series) -> pd.Series:
    """The objective of a `groups.model_labels` label (its first word)."""
    return models.astype(str).str.split(" ", n=1).str[0]


def _trials_of(frame: pd.DataFrame, splits: set[str], datasets: set[str]) -> pd.DataFrame:
    """The end-to-end trials of the given splits and datasets (for their seed count)."""
    keep = pd.Series(True, index=frame.index)
    if SPLIT in frame.columns:
        keep &= frame[SPLIT].astype(str).isin(splits)
    if DATASET in frame.columns and datasets != {""}:
        keep &= frame[DATASET].astype(str).isin(datasets)
    return frame[keep & ~_objectives(frame).isin(REFERENCE)]


def _decoder_rows(frame: pd.DataFrame, table: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    """Held-out NLL after minus before the decoder test, paired per end-to-end model."""
    if table.empty:
        return
    models = table[~_model_objective(table["model"]).isin(REFERENCE)]
    diff = models["heldout_nll_retrained"].astype("float64") - models["heldout_nll"].astype(
        "float64"
    )
    models = models.assign(_diff=diff)[np.isfinite(diff)]
    for (dataset, split), rows in models.groupby(["dataset", "split"], sort=True):
        if len(rows) < min_trials:
            continue
        where = _kind_text(split_kind(split), split, dataset)
        cell = f"split={split}, dataset={dataset}" if dataset else f"split={split}"
        yield finding_row(
            MONTERO2022,
            RETRAINED_DECODER_LOWERS_HELDOUT,
            f"Does retraining the decoder on the frozen encoder lower the held-out NLL ({where})?",
            "difference",
            "< 0",
            PAPER_DECODER,
            x=f"{DECODER_TEST_HELDOUT_NLL} - {HELDOUT_NLL}",
            y="held-out reconstruction NLL (model means)",
            group=f"{cell}; end-to-end models",
            pooled=paired_estimate(rows["_diff"].to_numpy()),
            n_text=f"{len(rows)} models, {int(rows['n'].sum())} trials",
            n_seeds=seed_count(_trials_of(frame, {split}, {dataset})),
        )


def _encoder_rows(frame: pd.DataFrame, table: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    """R^2 of recombination-to-element minus a harder condition's, paired per model and
    dataset, per split and readout."""
    if table.empty or "r2" not in table.columns:
        return
    rows = table[
        table["split"].astype(str).str.startswith(MONTERO2022_PREFIX)
        & (table["scenario"].astype(str) == "test")
        & ~_model_objective(table["model"]).isin(REFERENCE)
    ]
    rows = rows.assign(kind=rows["split"].astype(str).map(split_kind), r2=rows["r2"].astype(float))
    rows = rows[np.isfinite(rows["r2"])]
    keys = ["model", "dataset", "probe"]
    element = rows[rows["kind"] == ELEMENT].groupby(keys, sort=False)["r2"].mean()
    if element.empty:
        return
    element_splits = set(rows.loc[rows["kind"] == ELEMENT, "split"].astype(str))
    harder = rows[rows["kind"].isin([RANGE, EXTRAPOLATION])]
    for (split, probe), sub in harder.groupby(["split", "probe"], sort=True):
        paired = sub.join(element.rename("element_r2"), on=keys, how="inner")
        if len(paired) < min_trials:
            continue
        kind = split_kind(split)
        datasets = set(paired["dataset"].astype(str))
        yield finding_row(
            MONTERO2022,
            ENCODER_R2_FALLS,
            f"Does the encoder test's R^2 fall from recombination-to-element to {kind}"
            f" ({split}, {probe} readout)?",
            "r2_drop",
            "> 0",
            PAPER_ENCODER,
            x=f"{ELEMENT} - {split}",
            y=transfer_key("test", probe, "r2"),
            group=f"split={split}; end-to-end models",
            pooled=paired_estimate((paired["element_r2"] - paired["r2"]).to_numpy()),
            n_text=f"{len(paired)} model x dataset pairs",
            n_seeds=seed_count(_trials_of(frame, {split, *element_splits}, datasets)),
        )
