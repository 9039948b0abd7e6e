"""Montero et al. (NeurIPS 2022)'s decoder test, per model: the reconstruction NLL of the
held-out combinations before and after the decoder was trained again on the frozen encoder's
codes, and after the encoder was trained again against the frozen decoder where trials ran that
arm too (`raystudy.training.decoder_retrain`), as `decoder_test.csv`
(drawn by `raystudy.analysis.figures.decoder_arms`).

A retrained decoder that renders the held-out combinations much better than the end-to-end
one says the decoder had failed and the codes were enough; one that does not says the codes
(the encoder) failed, unless the ground-truth decoder, put through the same test, fails as
much. Training's NLLs stand beside: a retrained decoder that is worse on the held-out
combinations only because it is worse everywhere has not learnt what the first one had. The
encoder arm asks whether a new encoder, trained on the training combinations against the frozen
decoder, maps the held-out ones where that decoder renders them. A composition-trained model
has no end-to-end single-image NLL (its eval/* are the composition task's): its row holds the
retrained ones alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from raystudy.analysis.core.cells import DATASET
from raystudy.analysis.core.columns import (
    DECODER_TEST_HELDOUT_NLL,
    DECODER_TEST_NLL,
    HELDOUT_NLL,
    SPLIT,
    metric,
)
from raystudy.analysis.core.groups import model_labels, natural_order
from raystudy.keys import ENCODER_TEST, eval_key

KEYS = ["model", "split", "dataset"]
#: The table's NLLs (seed means) and the metric each is of: end to end, then with the decoder
#: retrained, then with the encoder retrained (the decoder test's two arms).
NLLS = {
    "train_nll": metric(eval_key("recon")),
    "train_nll_retrained": metric(DECODER_TEST_NLL),
    "train_nll_encoder_retrained": metric(eval_key(ENCODER_TEST)),
    "heldout_nll": metric(HELDOUT_NLL),
    "heldout_nll_retrained": metric(DECODER_TEST_HELDOUT_NLL),
    "heldout_nll_encoder_retrained": metric(eval_key(ENCODER_TEST, heldout=True)),
}
#: The NLLs whose seed spread (sample std, ddof 1) the table also gives.
SPREAD = ("heldout_nll", "heldout_nll_retrained", "heldout_nll_encoder_retrained")
COLUMNS = [*KEYS, "n", *NLLS, *(f"{name}_std" for name in SPREAD)]


def decoder_test_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model (`groups.model_labels`), split and dataset of the finished runs that logged
    the decoder test (either arm): the run count n and the seed mean of each NLL of `NLLS`
    (NaN where a run did not log it: a split without a held-out set, an arm not run), with the
    std of the held-out ones. Empty (with its columns) when no run logged the test."""
    arms = [metric(DECODER_TEST_NLL), metric(eval_key(ENCODER_TEST))]
    logged = pd.Series(False, index=frame.index)
    for col in arms:
        if col in frame.columns:
            logged |= frame[col].notna()
    if not logged.any():
        return pd.DataFrame(columns=COLUMNS)
    runs = frame[logged]
    values = pd.DataFrame(
        {name: runs[col] if col in runs.columns else np.nan for name, col in NLLS.items()},
        index=runs.index,
        dtype="float64",
    )
    values["model"] = model_labels(runs)
    values["split"] = runs[SPLIT].astype(str) if SPLIT in runs.columns else ""
    values["dataset"] = runs[DATASET].astype(str) if DATASET in runs.columns else ""
    grouped = values.groupby(KEYS, sort=False)
    table = grouped[list(NLLS)].mean()
    table.insert(0, "n", grouped.size())
    for name in SPREAD:
        table[f"{name}_std"] = grouped[name].std()
    table = table.reset_index()
    rank = {m: i for i, m in enumerate(natural_order(table["model"]))}
    table = table.assign(_model=table["model"].map(rank)).sort_values(
        ["dataset", "split", "_model"]
    )
    return table.drop(columns="_model").reset_index(drop=True)[COLUMNS]
