"""Montero et al.'s questions of "Lost in Latent Space: Disentangled Models and the Challenge
of Combinatorial Generalisation" (NeurIPS 2022) as Findings rows.

Montero et al. 2022 ask whether a failure on held-out combinations is the decoder's or the
encoder's (abstract):

- `RETRAINED_DECODER_LOWERS_HELDOUT`, per split and dataset of decoder_test.csv: the held-out
  NLL after minus before the decoder was retrained on the frozen encoder's codes, each model's
  seed means (`decoder_test_table`) paired, a t-test over end-to-end models; yes_if '< 0': the
  retrained decoder renders the held-out combinations better, so the decoder had failed;
- `ENCODER_R2_FALLS`, per dataset, montero2022_* split of the recombination-to-range or
  extrapolation kind and readout: R^2 of recombination-to-element's trials minus the split's,
  readouts fit on training combinations and scored on held-out ones, a difference of trial
  means (Welch) with the design (objective, hyperparameters) held fixed; yes_if '> 0'. A
  montero2022 split logs no in-distribution R^2 (its one probe scenario, `test`, is the
  held-out set), so the reference is recombination-to-element, where the paper finds models
  succeed (finding ii). Each dataset is its own row, because the same condition name is a
  different exclusion on each (`montero2022_r2r`: shape x position on dSprites, shape x
  object hue on 3DShapes) and finding (ii) answers them apart (`encoder_claim`).

The decoder test is of paired differences within a model: nothing to hold fixed, so `within`
is None; it answers no claim (the abstract does not say what retraining the decoder does).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from raystudy.analysis.core.cells import DATASET
from raystudy.analysis.core.columns import DECODER_TEST_HELDOUT_NLL, HELDOUT_NLL, SPLIT
from raystudy.analysis.core.groups import REFERENCE
from raystudy.analysis.findings.montero import (
    BEYOND_ELEMENT,
    ELEMENT,
    MONTERO2022,
    MONTERO2022_CITE,
    kind_text,
    objectives,
    split_kind,
)
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.shared import (
    PaperTables,
    paired_estimate,
    seed_count,
    split_columns,
    test_r2,
    two_group_difference,
)
from raystudy.analysis.tables.r2 import MONTERO2022_PREFIX
from raystudy.data.splits.papers.montero2022 import KINDS
from raystudy.keys import transfer_key

RETRAINED_DECODER_LOWERS_HELDOUT = "retrained_decoder_lowers_heldout_nll"
ENCODER_R2_FALLS = "encoder_r2_falls_beyond_element"

_NO_NUMBER_2022 = "no number quoted here (the abstract gives none)"
PAPER_DECODER = (
    "the paper does not answer it: its abstract asks whether failures are the decoder's"
    " (alternative b) and reports only that the encoders fail too (finding i), not whether a"
    f" retrained decoder renders the held-out combinations ({MONTERO2022_CITE}, abstract)"
)
#: Datasets the code's conditions are named for, and the conditions of finding (ii)'s second
#: half (an object property with its shape: 3DShapes' shape x object hue) and of its
#: counterpart on dSprites (shape x position, no object property).
_FAMILIES = ("dsprites", "shapes3d", "mpi3d")
SHAPE_PROPERTY = frozenset({"shape2ohue", "shape2ohueq", "shape2ohue_flnk"})
SHAPE_POSITION = frozenset({"shape2tx"})


def montero2022_rows(
    frame: pd.DataFrame, tables: PaperTables, *, min_trials: int
) -> list[dict[str, object]]:
    """Montero et al. 2022's questions (module docstring) that the tables can answer."""
    return [
        *_decoder_rows(frame, tables.decoder_test, min_trials=min_trials),
        *_encoder_rows(frame, min_trials=min_trials),
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
    return frame[keep & ~objectives(frame).isin(REFERENCE)]


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
        where = kind_text(split, dataset)
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


def _family(dataset: str) -> str:
    """The dataset family a name belongs to (`dsprites_file` -> `dsprites`), '' for others."""
    return next((f for f in _FAMILIES if f in dataset), "")


def _variant(split: str, dataset: str) -> str:
    """The condition of the code a split names on a dataset: `montero2022_r2r` on 3DShapes is
    `shape2ohue` (`KINDS`); `montero2022_shape2ohue` is itself."""
    name = split.removeprefix(MONTERO2022_PREFIX)
    return KINDS.get(name, {}).get(_family(dataset), name)


def encoder_claim(split: str, dataset: str) -> str:
    """The claim an encoder row tests: finding (ii)'s success where the excluded combinations
    join an object property with its shape, dSprites' shape x position as its counterpart,
    else finding (i)."""
    variant = _variant(split, dataset)
    if variant in SHAPE_PROPERTY:
        return f"{MONTERO2022}.shape_property_succeed"
    if variant in SHAPE_POSITION:
        return f"{MONTERO2022}.shape_position_fails"
    return f"{MONTERO2022}.encoder_fails"


def _encoder_rows(frame: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    """R^2 of recombination-to-element's trials minus a harder condition's, per dataset, split
    and readout, end-to-end models, with the design (objective, hyperparameters) held fixed."""
    if SPLIT not in frame.columns:
        return
    runs = frame[frame[SPLIT].astype(str).str.startswith(MONTERO2022_PREFIX, na=False)]
    runs = runs[~objectives(runs).isin(REFERENCE)]
    if runs.empty:
        return
    kinds = runs[SPLIT].astype(str).map(split_kind)
    datasets = (
        runs[DATASET].astype(str)
        if DATASET in runs.columns
        else pd.Series("", index=runs.index, dtype=object)
    )
    for probe, r2 in sorted(test_r2(runs).items()):
        for dataset in sorted(datasets.unique()):
            here = (datasets == dataset) & np.isfinite(r2)
            element = here & (kinds == ELEMENT)
            harder = runs.loc[here & kinds.isin(BEYOND_ELEMENT), SPLIT].astype(str)
            for split in sorted(harder.unique()):
                keep = element | (here & (runs[SPLIT].astype(str) == split))
                sub = runs[keep]
                flag = element[keep].to_numpy()
                if min(flag.sum(), (~flag).sum()) < min_trials:
                    continue
                values = r2[keep].to_numpy()
                excluded = (*split_columns(sub), DATASET)
                pooled, within = two_group_difference(sub, values, flag, excluded)
                where = ", ".join(p for p in (split, dataset) if p)
                yield finding_row(
                    MONTERO2022,
                    ENCODER_R2_FALLS,
                    f"Does the encoder test's R^2 fall from recombination-to-element to"
                    f" {split_kind(split)} ({where}, {probe} readout)?",
                    "r2_drop",
                    "> 0",
                    "",
                    x=f"{ELEMENT} - {split}",
                    y=transfer_key("test", probe, "r2"),
                    group=f"split={split}"
                    + (f", dataset={dataset}" if dataset else "")
                    + "; end-to-end models",
                    pooled=pooled,
                    n_text=f"{int(flag.sum())} + {int((~flag).sum())}",
                    within=within,
                    n_seeds=seed_count(sub),
                    claim_id=encoder_claim(split, dataset),
                )
