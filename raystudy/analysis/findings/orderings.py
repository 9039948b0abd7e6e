"""Claims tested as orderings, or as contrasts between groups of trials, rather than against 0
(`raystudy.analysis.claims`: `expects: ordering` and the contrasts beside them).

- `GAP_ORDER` (Montero et al. 2021), per dataset: the end-to-end models' relative
  reconstruction gap ((held-out - training) / training NLL) of recombination-to-range minus
  recombination-to-element's, and extrapolation's minus range's: each step a difference of
  trial means (Welch), with the design (objective, hyperparameters) held fixed
  (`design.adjusted_difference`); every step of the chain must be > 0, and each is one test
  of the family (Holm-corrected paired differences, the chain read step by step);
- `GT_LESS_AFFECTED` (Montero et al. 2021), per extrapolation cell: the ground-truth
  decoder's relative gap minus the end-to-end models', a Welch test (the decoder and the models
  differ in objective, net and learning rate by definition: nothing to hold fixed); < 0;
- `DATASET_ORDER` (Schott et al. 2022), per kind of split and readout: R^2 of dSprites minus
  Shapes3D's, and of Shapes3D minus MPI3D's, over every model's trials of that kind, the
  design (model, hyperparameters) held fixed; each step > 0;
- `GBT_STRONGER` (Dittadi et al. 2021), per OOD1 scenario: rho(D, GBT MAE) - rho(D, MLP MAE)
  over the same trials, its interval and p from `n_boot` bootstrap resamples of the trials
  (the two correlations share D and the trials, so they are resampled together); < 0 (the
  GBT's correlation the stronger, negative one). Pooled: a difference of two correlations
  with the design held fixed would need partial correlations of each resample, not done.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Iterator

import numpy as np
import pandas as pd

from raystudy.analysis.core.cells import DATASET, SEPARATOR
from raystudy.analysis.core.columns import SPLIT, short, transfer_scores
from raystudy.analysis.core.groups import REFERENCE
from raystudy.analysis.findings.montero import (
    ELEMENT,
    EXTRAPOLATION,
    MONTERO2021,
    RANGE,
    objectives,
    split_kind,
)
from raystudy.analysis.findings.montero2021 import GT_DECODER, relative_gaps
from raystudy.analysis.findings.rows import finding_row
from raystudy.analysis.findings.schott import KINDS, SCHOTT2022
from raystudy.analysis.findings.shared import (
    numbers,
    seed_count,
    split_columns,
    test_r2,
    two_group_difference,
)
from raystudy.analysis.stats.bootstrap import bootstrap_weights, in_chunks, weighted_spearman
from raystudy.analysis.stats.inference import ALPHA, Estimate, difference_test
from raystudy.analysis.tables.r2 import MONTERO2022_PREFIX, SCHOTT_PREFIX
from raystudy.analysis.tables.r2 import split_kind as r2_kind
from raystudy.keys import transfer_key

GAP_ORDER = "heldout_gap_grows_with_condition"
GT_LESS_AFFECTED = "gt_decoder_gap_below_models"
DATASET_ORDER = "r2_falls_towards_realistic_datasets"
GBT_STRONGER = "gbt_correlation_stronger_than_mlp"
DITTADI = "dittadi2021"
#: Montero et al. 2021's conditions in the order of the claim, and Schott et al.'s datasets.
CONDITION_ORDER = (ELEMENT, RANGE, EXTRAPOLATION)
DATASET_FAMILIES = ("dsprites", "shapes3d", "mpi3d")


def ordering_rows(
    frame: pd.DataFrame, dis: str | None, *, min_trials: int, n_boot: int, seed: int
) -> list[dict[str, object]]:
    """The rows (module docstring) that `frame`'s finished trials answer; `dis` the
    disentanglement column of Dittadi et al.'s questions (None: that question has no row)."""
    return [
        *_gap_order_rows(frame, min_trials=min_trials),
        *_gt_rows(frame, min_trials=min_trials),
        *_dataset_rows(frame, min_trials=min_trials),
        *([] if dis is None else _gbt_rows(frame, dis, n_boot=n_boot, seed=seed)),
    ]


def _datasets(frame: pd.DataFrame) -> pd.Series:
    if DATASET not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[DATASET].astype(str)


def _montero2021_trials(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Trials of Montero et al. 2021's conditions with a relative gap, and the gaps."""
    if SPLIT not in frame.columns:
        return frame.iloc[:0], pd.Series(dtype=np.float64)
    splits = frame[SPLIT].astype(str)
    keep = splits.map(split_kind).isin(CONDITION_ORDER) & ~splits.str.startswith(MONTERO2022_PREFIX)
    gaps = relative_gaps(frame)
    if gaps is None:
        return frame.iloc[:0], pd.Series(dtype=np.float64)
    keep &= np.isfinite(gaps)
    return frame[keep], gaps[keep]


def _gap_order_rows(frame: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    trials, gaps = _montero2021_trials(frame)
    trials, gaps = (
        trials[~objectives(trials).isin(REFERENCE)],
        gaps[~objectives(trials).isin(REFERENCE)],
    )
    kinds = trials[SPLIT].astype(str).map(split_kind) if not trials.empty else pd.Series()
    datasets = _datasets(trials)
    for dataset in sorted(datasets.unique()):
        for lower, higher in itertools.pairwise(CONDITION_ORDER):
            keep = (datasets == dataset) & kinds.isin([lower, higher])
            sub = trials[keep]
            flag = (kinds[keep] == higher).to_numpy()
            if min(flag.sum(), (~flag).sum()) < min_trials:
                continue
            values = gaps[keep].to_numpy()
            excluded = (*split_columns(sub), DATASET)
            pooled, within = two_group_difference(sub, values, flag, excluded)
            where = f", {dataset}" if dataset else ""
            yield finding_row(
                MONTERO2021,
                GAP_ORDER,
                f"Is the held-out reconstruction gap larger under {higher} than under {lower}"
                f" (end-to-end models{where})?",
                "gap_difference",
                "> 0",
                "",
                x=f"gap({higher}) - gap({lower})",
                y="(held-out - training) / training reconstruction NLL",
                group=(f"dataset={dataset}; " if dataset else "") + "end-to-end models",
                pooled=pooled,
                n_text=f"{int(flag.sum())} + {int((~flag).sum())}",
                within=within,
                n_seeds=seed_count(sub),
                claim_id=f"{MONTERO2021}.gap_ordering",
            )


def _gt_rows(frame: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    trials, gaps = _montero2021_trials(frame)
    if trials.empty:
        return
    kinds = trials[SPLIT].astype(str).map(split_kind)
    objective = objectives(trials)
    gt = objective == GT_DECODER
    end_to_end = ~objective.isin(REFERENCE)
    for (dataset, split), sub in trials[kinds == EXTRAPOLATION].groupby(
        [_datasets(trials), trials[SPLIT].astype(str)], sort=True
    ):
        keep = sub.index[(gt | end_to_end)[sub.index]]
        flag = gt[keep].to_numpy()
        if min(flag.sum(), (~flag).sum()) < min_trials:
            continue
        values = gaps[keep].to_numpy()
        where = ", ".join(p for p in (split, dataset) if p)
        yield finding_row(
            MONTERO2021,
            GT_LESS_AFFECTED,
            f"Is the ground-truth decoder's held-out gap below the end-to-end models' ({where})?",
            "gap_difference",
            "< 0",
            "",
            x="gap(gt_decoder) - gap(end-to-end)",
            y="(held-out - training) / training reconstruction NLL",
            group=f"split={split}" + (f", dataset={dataset}" if dataset else ""),
            pooled=difference_test(values, flag, np.empty((len(keep), 0))),
            n_text=f"{int(flag.sum())} + {int((~flag).sum())}",
            n_seeds=seed_count(trials.loc[keep]),
            claim_id=f"{MONTERO2021}.gt_decoder_less_affected",
        )


def _family(dataset: str) -> str:
    return next((f for f in DATASET_FAMILIES if dataset.startswith(f)), "")


def _dataset_rows(frame: pd.DataFrame, *, min_trials: int) -> Iterator[dict]:
    if SPLIT not in frame.columns or DATASET not in frame.columns:
        return
    runs = frame[frame[SPLIT].astype(str).str.startswith(SCHOTT_PREFIX, na=False)]
    if runs.empty:
        return
    kinds = r2_kind(runs[SPLIT])
    families = runs[DATASET].astype(str).map(_family)
    for probe, r2 in sorted(test_r2(runs).items()):
        for kind in KINDS:
            for easier, harder in itertools.pairwise(DATASET_FAMILIES):
                keep = (kinds == kind) & families.isin([easier, harder]) & np.isfinite(r2)
                sub = runs[keep]
                flag = (families[keep] == easier).to_numpy()
                if min(flag.sum(), (~flag).sum()) < min_trials:
                    continue
                values = r2[keep].to_numpy()
                excluded = (*split_columns(sub), DATASET, *_dataset_options(sub))
                pooled, within = two_group_difference(sub, values, flag, excluded)
                yield finding_row(
                    SCHOTT2022,
                    DATASET_ORDER,
                    f"Is R^2 on {kind} higher on {easier} than on {harder} ({probe} readout)?",
                    "r2_difference",
                    "> 0",
                    "",
                    x=f"R^2({easier}) - R^2({harder})",
                    y=transfer_key("test", probe, "r2"),
                    group=f"split={SCHOTT_PREFIX}{kind}",
                    pooled=pooled,
                    n_text=f"{int(flag.sum())} + {int((~flag).sum())}",
                    within=within,
                    n_seeds=seed_count(sub),
                    claim_id=f"{SCHOTT2022}.dataset_ordering",
                )


def _dataset_options(frame: pd.DataFrame) -> tuple[str, ...]:
    """A dataset's options (`params.dataset.options.*`) go with the dataset compared."""
    return tuple(c for c in frame.columns if c.startswith(DATASET.rsplit(".", 1)[0] + ".options"))


def _gbt_rows(frame: pd.DataFrame, dis: str, *, n_boot: int, seed: int) -> Iterator[dict]:
    maes = {
        (t.scenario, t.probe): t.column
        for t in transfer_scores(frame, ("mae",))
        if t.scenario.split(SEPARATOR)[0].startswith("ood1")
    }
    for (scenario, probe), gbt in sorted(maes.items()):
        mlp = maes.get((scenario, "mlp"))
        if probe != "gbt" or mlp is None:
            continue
        x, y = numbers(frame, dis), np.column_stack([numbers(frame, gbt), numbers(frame, mlp)])
        keep = np.isfinite(x) & np.isfinite(y).all(axis=1)
        if keep.sum() < 4:
            continue
        pooled = _rho_difference(x[keep, None], y[keep], n_boot=n_boot, seed=seed, key=scenario)
        yield finding_row(
            DITTADI,
            GBT_STRONGER,
            f"Is the disentanglement-transfer correlation stronger for the GBT than for the MLP"
            f" ({scenario})?",
            "rho_difference",
            "< 0",
            "",
            x=f"rho({short(dis)}, gbt MAE) - rho({short(dis)}, mlp MAE)",
            y=transfer_key(scenario, "<probe>", "mae"),
            group="all",
            pooled=pooled,
            n_seeds=seed_count(frame[keep]),
            claim_id=f"{DITTADI}.gbt_stronger_than_mlp",
        )


def _rho_difference(x: np.ndarray, y: np.ndarray, *, n_boot: int, seed: int, key: str) -> Estimate:
    """rho(x, y0) - rho(x, y1), its percentile-bootstrap interval, the bootstrap's two-sided p
    (twice the smaller share of resamples on either side of 0) and standard error."""
    n = x.shape[0]
    value = float(np.diff(weighted_spearman(np.ones((1, n)), x, y)[0, 0])[0]) * -1.0
    if n_boot < 1:
        return Estimate(value, math.nan, math.nan, math.nan, math.nan, n)
    rng = np.random.default_rng([seed, zlib.crc32(f"{GBT_STRONGER}/{key}".encode())])
    boot = in_chunks(
        n_boot,
        max(1, 100_000 // n),
        lambda size: weighted_spearman(bootstrap_weights(n, size, rng), x, y),
    )
    diffs = boot[:, 0, 0] - boot[:, 0, 1]
    diffs = diffs[np.isfinite(diffs)]
    if diffs.size * 2 < n_boot:
        return Estimate(value, math.nan, math.nan, math.nan, math.nan, n)
    low, high = np.percentile(diffs, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    p = min(1.0, 2.0 * min(float((diffs <= 0).mean()), float((diffs >= 0).mean())))
    return Estimate(
        value, float(low), float(high), max(p, 1.0 / diffs.size), float(diffs.std(ddof=1)), n
    )
