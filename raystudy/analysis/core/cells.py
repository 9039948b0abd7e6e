"""Which trials' transfer scores measure the same thing: those of one dataset and one split.

Every split names its OOD scenarios itself, and several name theirs alike (each Schott et al.
2022 and Montero et al. 2021 split has one scenario, `test`), so a study over several splits or
datasets logs `transfer/test/<probe>/mae` for errors on different factors, images and tasks.
Correlating a score with that column across splits measures which split is harder, not which
model transfers better (Simpson's paradox: within each split the relation can have the
opposite sign). Here each transfer column is split into one per cell, its scenario renamed
`<scenario>@<cell>`, so every correlation, selection and figure compares models of one cell.
"""

from __future__ import annotations

import pandas as pd

from raystudy.analysis.core.columns import METRIC, PARAM, SPLIT
from raystudy.data.splits.papers.dittadi import HELD_OUT_HUES_PARAM
from raystudy.keys import TRANSFER

DATASET = "params.dataset.name"
#: The cell of each trial, when a study has more than one.
CELL = "cell"
SEPARATOR = "@"
#: `split.*` params that a split resolves per trial rather than defines: Dittadi's held-out
#: hues, drawn per seed under `held_out: per_seed`, vary within one split and one cell.
RESOLVED = frozenset({PARAM + HELD_OUT_HUES_PARAM})


def _split_labels(frame: pd.DataFrame) -> pd.Series:
    """A built-in split's name; `custom`, `custom2`, ... for distinct splits written out in
    the spec (whose MLflow params are `split.*` keys, not one `split` value)."""
    named = frame[SPLIT] if SPLIT in frame.columns else pd.Series(None, frame.index, object)
    keys = sorted(c for c in frame.columns if c.startswith(SPLIT + ".") and c not in RESOLVED)
    custom = frame[keys].astype(str).agg("|".join, axis=1) if keys else None
    labels: dict[str, str] = {}
    out = []
    for i, name in zip(frame.index, named, strict=True):
        if isinstance(name, str) and name and name.lower() != "nan":
            out.append(name)
            continue
        key = custom.loc[i] if custom is not None else ""
        labels.setdefault(key, "custom" if not labels else f"custom{len(labels) + 1}")
        out.append(labels[key])
    return pd.Series(out, index=frame.index, dtype=object)


def cells(frame: pd.DataFrame) -> pd.Series | None:
    """Each trial's cell, named by what varies (`iid`, `shapes3d`, `shapes3d:iid`); None
    when every trial shares one dataset and split."""
    parts = []
    if DATASET in frame.columns and frame[DATASET].astype(str).nunique() > 1:
        parts.append(frame[DATASET].astype(str))
    splits = _split_labels(frame)
    if splits.nunique() > 1:
        parts.append(splits)
    if not parts:
        return None
    label = parts[0]
    for part in parts[1:]:
        label = label + ":" + part
    return label.rename(CELL)


def transfer_by_cell(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each `transfer/<scenario>/...` column split into one per cell
    (`transfer/<scenario>@<cell>/...`, empty outside its cell) and a `cell` column; unchanged
    when there is one cell."""
    label = cells(frame)
    if label is None:
        return frame
    transfer = [c for c in frame.columns if c.startswith(METRIC + TRANSFER)]
    pieces = {}
    for column in transfer:
        head, scenario, rest = column.split("/", 2)
        for cell in sorted(label.unique()):
            values = frame[column].where(label == cell)
            if values.notna().any():
                pieces[f"{head}/{scenario}{SEPARATOR}{cell}/{rest}"] = values
    kept = frame.drop(columns=transfer)
    return pd.concat([kept, pd.DataFrame(pieces, index=frame.index), label], axis=1)
