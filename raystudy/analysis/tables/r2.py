"""Schott et al. (2022)'s main result as a table: absolute R^2 of each model on each split;
the same table is Montero et al. (2022)'s encoder test.

Schott et al. ("Visual Representation Learning Does Not Generalize Strongly Within the Same
Domain", ICLR 2022) report the R^2 of probes regressing every factor from a representation,
per model, split (random, composition, interpolation, extrapolation) and dataset, as a mean
over seeds with its spread; not a correlation. Here, over the finished runs of `schott_*`
splits (their transfer keys `transfer/<scenario>/<probe>/r2[/<factor>]`, R^2 against the
full grid's variance, see `raystudy.metrics.transfer`):

- `r2_table`: per model (`groups.model_labels`), split, dataset, scenario and probe, the
  seed mean, sample standard deviation (ddof 1) and count of `r2` and of each `r2/<factor>`;
- `r2_modularity`: per `single_<factor>` scenario (one factor out of range, the others in it),
  the R^2 of the OOD factor beside the mean R^2 of the other factors, each averaged over
  seeds: Schott et al.'s modularity finding is that the others stay predictable.

Montero et al. (NeurIPS 2022, "Lost in Latent Space", Sec. 4) ask whether a model's encoder
maps unseen combinations where they belong: readouts fit on the training combinations and
scored on the held-out ones, R^2 per factor. A `montero2022_*` split's scenario `test` is
exactly that (`raystudy.data.splits.papers.montero2022`), so its runs enter the same table.
"""

from __future__ import annotations

import pandas as pd

from raystudy.analysis.core.cells import DATASET
from raystudy.analysis.core.columns import SPLIT, transfer_scores
from raystudy.analysis.core.groups import model_labels, natural_order

#: A split of Schott et al. is registered as `schott_<kind>` (`raystudy.data.splits.papers.schott`),
#: one of Montero et al. 2022 as `montero2022_<condition>` (`...papers.montero2022`).
SCHOTT_PREFIX = "schott_"
MONTERO2022_PREFIX = "montero2022_"
R2_PREFIXES = (SCHOTT_PREFIX, MONTERO2022_PREFIX)
#: The papers' orders: from in-distribution to the hardest shift (Schott's kinds, then
#: Montero's recombination-to-element, -to-range and extrapolation).
SPLIT_ORDER = ("random", "composition", "interpolation", "extrapolation", "r2e", "r2r", "extrp")
SINGLE_PREFIX = "single_"
R2 = "r2"
KEYS = ["model", "split", "dataset", "scenario", "probe"]
MODULARITY_KEYS = ["model", "split", "dataset", "probe", "ood_factor"]
MODULARITY_COLUMNS = [
    *MODULARITY_KEYS,
    "n",
    "ood_r2",
    "ood_r2_std",
    "others_r2",
    "others_r2_std",
]


def schott_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of `frame` (finished trials, transfer columns not split by cell) whose split
    is one of Schott et al.'s or Montero et al. 2022's, with `model`, `split` and `dataset`
    columns in front."""
    if SPLIT not in frame.columns:
        return pd.DataFrame(columns=["model", "split", "dataset"])
    runs = frame[frame[SPLIT].astype(str).str.startswith(R2_PREFIXES, na=False)]
    dataset = runs[DATASET].astype(str) if DATASET in runs.columns else ""
    head = pd.DataFrame(
        {"model": model_labels(runs), "split": runs[SPLIT].astype(str), "dataset": dataset},
        index=runs.index,
    )
    return pd.concat([head, runs], axis=1)


def _order(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Datasets, then splits in the paper's order, models by their numbers, then the rest of
    `keys` alphabetically."""
    kind = split_kind(table["split"])
    rank = kind.map({k: i for i, k in enumerate(SPLIT_ORDER)}).fillna(len(SPLIT_ORDER))
    models = {m: i for i, m in enumerate(natural_order(table["model"]))}
    rest = [k for k in keys if k not in ("dataset", "split", "model")]
    ordered = table.assign(_rank=rank, _model=table["model"].map(models)).sort_values(
        ["dataset", "_rank", "split", "_model", *rest]
    )
    return ordered.drop(columns=["_rank", "_model"]).reset_index(drop=True)


def split_kind(splits: pd.Series) -> pd.Series:
    """`extrapolation` of `schott_extrapolation`, `r2e` of `montero2022_r2e`."""
    out = splits.astype(str)
    for prefix in R2_PREFIXES:
        out = out.str.removeprefix(prefix)
    return out


def _seed_stats(long: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Mean, sample std and count of `value` over the runs of each `keys` group."""
    grouped = long.dropna(subset=[value]).groupby(keys, sort=False)[value]
    return grouped.agg(["mean", "std", "count"])


def r2_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Seed mean, spread and count of R^2 per model, split, dataset, scenario and probe, over
    factors (`r2`, `r2_std`, `n`) and per factor (`r2/<factor>`, `r2_std/<factor>`).

    Empty (with the key columns) when no finished run has a `schott_*` or `montero2022_*`
    split.
    """
    runs = schott_runs(frame)
    scores = transfer_scores(runs, (R2,)) + transfer_scores(runs, (R2,), per_factor=True)
    if runs.empty or not scores:
        return pd.DataFrame(columns=[*KEYS, "n", R2, f"{R2}_std"])
    long = pd.concat(
        [
            runs[["model", "split", "dataset"]].assign(
                scenario=t.scenario, probe=t.probe, factor=t.factor or "", value=runs[t.column]
            )
            for t in scores
        ],
        ignore_index=True,
    )
    stats = _seed_stats(long, [*KEYS, "factor"], "value")
    if stats.empty:
        return pd.DataFrame(columns=[*KEYS, "n", R2, f"{R2}_std"])
    wide = stats.unstack("factor")
    columns = {("count", ""): "n", ("mean", ""): R2, ("std", ""): f"{R2}_std"}
    factors = [f for f in wide.columns.get_level_values("factor").unique() if f]
    for factor in factors:
        columns[("mean", factor)] = f"{R2}/{factor}"
        columns[("std", factor)] = f"{R2}_std/{factor}"
    present = [c for c in columns if c in wide.columns]
    table = wide[present].set_axis([columns[c] for c in present], axis=1).reset_index()
    if "n" in table.columns:
        # A scenario with per-factor scores only has no run count of its own: none is 0.
        table["n"] = table["n"].fillna(0).astype("int64")
    return _order(table, KEYS)


def r2_modularity(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model, split, dataset, probe and OOD factor (of each `single_<factor>` scenario):
    the seed mean and std of the OOD factor's R^2 (`ood_r2`) and of the mean R^2 of the other
    factors (`others_r2`, averaged over factors in each run first), with the run count n."""
    runs = schott_runs(frame)
    scores = transfer_scores(runs, (R2,), per_factor=True)
    pieces = []
    for scenario, probe in sorted({(t.scenario, t.probe) for t in scores}):
        if not scenario.startswith(SINGLE_PREFIX):
            continue
        ood = scenario.removeprefix(SINGLE_PREFIX)
        by_factor = {
            t.factor: t.column for t in scores if (t.scenario, t.probe) == (scenario, probe)
        }
        others = [column for factor, column in by_factor.items() if factor != ood]
        if ood not in by_factor or not others:
            continue
        pieces.append(
            runs[["model", "split", "dataset"]].assign(
                probe=probe,
                ood_factor=ood,
                ood=runs[by_factor[ood]],
                others=runs[others].mean(axis=1, skipna=False),
            )
        )
    if not pieces:
        return pd.DataFrame(columns=MODULARITY_COLUMNS)
    long = pd.concat(pieces, ignore_index=True).dropna(subset=["ood", "others"])
    if long.empty:
        return pd.DataFrame(columns=MODULARITY_COLUMNS)
    ood = _seed_stats(long, MODULARITY_KEYS, "ood")
    others = _seed_stats(long, MODULARITY_KEYS, "others")
    table = pd.DataFrame(
        {
            "n": ood["count"].astype("int64"),
            "ood_r2": ood["mean"],
            "ood_r2_std": ood["std"],
            "others_r2": others["mean"],
            "others_r2_std": others["std"],
        }
    ).reset_index()
    return _order(table, MODULARITY_KEYS)[MODULARITY_COLUMNS]
