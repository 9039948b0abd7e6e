"""Model selection by a proxy score, measured as regret in OOD transfer error.

The papers' practical question (Dittadi et al. 2021, Sec. 5.3 and Fig. 6; Locatello et al.
2019, Sec. 5.4): without OOD labels, can one pick the model that will transfer best by its
ELBO, its reconstruction, or (with labels) a disentanglement score? For each transfer score,
the model a proxy ranks first is compared with the best model in hindsight:

    regret = mae(model chosen by the proxy) - min over models of mae

Zero means the proxy found the best model; `random_regret`, the mean error minus the best, is
what picking a model at random costs on average, the baseline a useful proxy must beat.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from raystudy.analysis.core.columns import (
    RUN_NAME,
    predictor_columns,
    selection_direction,
    short,
    transfer_scores,
)
from raystudy.analysis.core.groups import Groups

COLUMNS = [
    "scenario",
    "probe",
    "group",
    "selector",
    "direction",
    "n",
    "chosen",
    "chosen_mae",
    "best_mae",
    "regret",
    "random_regret",
]


def selector_columns(frame: pd.DataFrame) -> list[str]:
    """Scores that can rank models: ELBO, reconstruction, every `dis/*` and `down/*`."""
    return [c for c in predictor_columns(frame) if selection_direction(c)]


def select(scores: np.ndarray, errors: np.ndarray, direction: str) -> tuple[int, float] | None:
    """(position of the chosen row, its error), or None when the proxy cannot choose: fewer
    than two distinct proxy values among the rows that have both.

    The proxy chooses among the rows where both values exist (the best and mean error it is
    read against are over every row with an error, see `selection_table`). A tie at the top
    costs the mean error of the tied rows (what a random tie-break costs on average); the
    position is the first of them in table order (trials are sorted by name), so a result
    never depends on how the store listed runs.
    """
    both = np.flatnonzero(np.isfinite(scores) & np.isfinite(errors))
    if both.size == 0 or np.unique(scores[both]).size < 2:
        return None
    s, e = scores[both], errors[both]
    tied = np.flatnonzero(s == (s.max() if direction == "max" else s.min()))
    return int(both[tied[0]]), float(e[tied].mean())


def selection_table(frame: pd.DataFrame, groups: Groups, *, min_trials: int = 5) -> pd.DataFrame:
    """One row per (scenario, probe, group, selector) for every `transfer/*/mae` score.

    A cell with fewer than `min_trials` trials holding both scores, or whose selector is
    constant over them, is blank (n is kept); `best_mae` and `random_regret` are over every
    trial with the transfer score, the same on each selector's row.
    """
    names = frame[RUN_NAME] if RUN_NAME in frame.columns else frame.index.to_series().astype(str)
    targets = transfer_scores(frame, ("mae",))
    selectors = selector_columns(frame)
    rows: list[dict[str, object]] = []
    for group, index in groups:
        # Plain arrays: thousands of small cells cost milliseconds, not pandas' seconds.
        sub = frame.loc[index]
        labels = names.loc[index].astype(str).to_numpy()
        scores = sub[selectors].to_numpy(dtype=np.float64, na_value=np.nan)
        for target in targets:
            errors = sub[target.column].to_numpy(dtype=np.float64, na_value=np.nan)
            valid = errors[np.isfinite(errors)]
            # The scale every selector of this target is read against, whether or not it
            # can choose: the best model in hindsight (of every model, not only those a
            # selector was logged for) and the cost of a random choice.
            best = float(valid.min()) if valid.size else math.nan
            scale: dict[str, object] = (
                {"best_mae": best, "random_regret": float(valid.mean()) - best}
                if valid.size >= min_trials
                else {}
            )
            for j, selector in enumerate(selectors):
                direction = selection_direction(selector) or "max"
                n = int((np.isfinite(scores[:, j]) & np.isfinite(errors)).sum())
                row: dict[str, object] = {
                    "scenario": target.scenario,
                    "probe": target.probe,
                    "group": group,
                    "selector": short(selector),
                    "direction": direction,
                    "n": n,
                    **scale,
                }
                picked = select(scores[:, j], errors, direction)
                if picked is not None and n >= min_trials:
                    at, chosen = picked
                    row.update(chosen=labels[at], chosen_mae=chosen, regret=chosen - best)
                rows.append(row)
    table = pd.DataFrame(rows, columns=COLUMNS).astype(
        {c: "float64" for c in ("chosen_mae", "best_mae", "regret", "random_regret")}
    )
    if table.empty:
        return table
    # Read by scenario and probe first, as the report shows it.
    order = {(t.scenario, t.probe): i for i, t in enumerate(targets)}
    key = table[["scenario", "probe"]].apply(tuple, axis=1).map(order)
    return table.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def regret_pivot(table: pd.DataFrame, group: str = "all") -> pd.DataFrame:
    """Rows: selectors; columns: `<scenario>/<probe>`; cells: regret, for one group."""
    sub = table[table["group"] == group].assign(target=lambda t: t["scenario"] + "/" + t["probe"])
    wide = sub.pivot(index="selector", columns="target", values="regret")
    return wide.reindex(index=pd.unique(sub["selector"]), columns=pd.unique(sub["target"]))
