"""A study says what computed each probe's scores: the runs' `raystudy.probe.*` tags, read
back into the report's table and the terminal summary, with a study that mixes two flagged."""

from __future__ import annotations

import numpy as np
import pandas as pd

from raystudy.analysis.core.results import NOT_RECORDED, probe_implementations
from raystudy.analysis.summary import _probes
from raystudy.tags import RUN_FINISHED, RUN_NAME_TAG, column, probe_tag

SKLEARN = "sklearn MLPRegressor float64 on cpu"
TORCH = "torch batched float32 on cuda:0"


def runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "status": [RUN_FINISHED] * 4 + ["FAILED"],
            column(RUN_NAME_TAG): [f"t{i}" for i in range(5)],
            "metrics.transfer/ood1/mlp/r2": [0.5, 0.6, 0.4, 0.7, np.nan],
            "metrics.transfer/ood1/gbt/r2": [0.5, 0.6, np.nan, np.nan, np.nan],
            column(probe_tag("mlp")): [SKLEARN, SKLEARN, TORCH, None, TORCH],
            column(probe_tag("gbt")): [
                "xgboost hist on cpu",
                "xgboost hist on cpu",
                None,
                None,
                None,
            ],
        }
    )


def test_each_probe_lists_what_computed_it_in_finished_runs():
    table = probe_implementations(runs())
    rows = {(r.probe, r._2): r.runs for r in table.itertuples()}
    # The failed run is not counted; a run from before the tag is named as such; a probe
    # counts only the runs that scored it.
    assert rows == {
        ("gbt", "xgboost hist on cpu"): 2,
        ("mlp", SKLEARN): 2,
        ("mlp", TORCH): 1,
        ("mlp", NOT_RECORDED): 1,
    }


def test_the_summary_flags_a_probe_computed_two_ways():
    lines = _probes(probe_implementations(runs()))
    (gbt,) = [line for line in lines if "probe gbt" in line]
    (mlp,) = [line for line in lines if "probe mlp" in line]
    assert "MIXED" not in gbt and "MIXED" in mlp and f"{TORCH} (1 runs)" in mlp


def test_a_study_with_no_probes_has_an_empty_table():
    frame = runs().drop(columns=[c for c in runs().columns if "transfer" in c])
    assert probe_implementations(frame).empty and _probes(probe_implementations(frame)) == []
