"""What Montero et al.'s two papers' questions share (`montero2021`, `montero2022`): one
table of conditions (`SPLIT_KINDS`: each split's kind, recombination-to-element, -to-range or
extrapolation) and one way of saying where a row's trials are.
"""

from __future__ import annotations

import pandas as pd

from raystudy.analysis.core.columns import OBJECTIVE, SPLIT
from raystudy.analysis.findings.shared import only_value
from raystudy.analysis.tables.r2 import MONTERO2022_PREFIX
from raystudy.data.splits.papers.montero2021 import VARIANT_KINDS

MONTERO2021, MONTERO2022 = "montero2021", "montero2022"
MONTERO2022_CITE = "Montero et al. 2022"
ELEMENT, RANGE, EXTRAPOLATION = (
    "recombination-to-element",
    "recombination-to-range",
    "extrapolation",
)
#: The kinds that ask more than recombination-to-element, where Montero et al. 2021's models
#: generalised.
BEYOND_ELEMENT = (RANGE, EXTRAPOLATION)
#: The 2022 code's interpolation conditions (held-out hue values between training ones).
INTERPOLATION = "interpolation"
#: Each split of Montero et al.'s conditions and its kind (raystudy.data.splits.papers:
#: montero2021, the 2021 splits; montero2022, the 2022 paper's conditions, bracketed by family).
SPLIT_KINDS: dict[str, str] = {
    "montero_element": ELEMENT,
    "montero_range": RANGE,
    "montero_extrapolation": EXTRAPOLATION,
    # every condition of the 2021 code (raystudy.data.montero.VARIANT_KINDS)
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


def split_kind(split: str) -> str:
    """Montero et al.'s kind of a split, '' for any other split."""
    return SPLIT_KINDS.get(split, "")


def kind_text(split: str, where: str) -> str:
    """How a question names its trials: the split's kind, the split, and where (a cell or a
    dataset), each once."""
    named = split if split and split not in where else ""
    return ", ".join(dict.fromkeys(p for p in (split_kind(split), named, where) if p))


def split_of(trials: pd.DataFrame) -> str:
    """The split all of `trials` share ('' when none or several)."""
    return only_value(trials, SPLIT)


def objectives(frame: pd.DataFrame) -> pd.Series:
    """Each trial's objective ('' for all without the column)."""
    if OBJECTIVE not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[OBJECTIVE].astype(str)
