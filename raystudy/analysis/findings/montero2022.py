"""Montero et al.'s questions of "Lost in Latent Space: Disentangled Models and the Challenge
of Combinatorial Generalisation" (NeurIPS 2022) as Findings rows.

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

Every test is of paired differences within a model: nothing to hold fixed, so `within` is
None.
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
    kind_text,
    objectives,
    split_kind,
)
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.shared import PaperTables, paired_estimate, seed_count
from raystudy.analysis.tables.r2 import MONTERO2022_PREFIX
from raystudy.keys import transfer_key

MONTERO2022 = "montero2022"
RETRAINED_DECODER_LOWERS_HELDOUT = "retrained_decoder_lowers_heldout_nll"
ENCODER_R2_FALLS = "encoder_r2_falls_beyond_element"

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
    harder = rows[rows["kind"].isin(BEYOND_ELEMENT)]
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
