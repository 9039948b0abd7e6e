"""The papers' claims answered: one row per claim of `raystudy.analysis.claims` (`claims.csv`),
from the Findings rows that test it.

A claim is tested by every Findings row that names it (one per probe, scenario, model or
condition). Its agreement is read from theirs: `agrees` when every row agrees (a claim about
every model, readout or condition holds only where it holds in each); `disagrees` when any row
disagrees; `confounded` when none disagrees and a row is confounded; `inconclusive` otherwise;
`not testable` when the study has no row for it, with what the study would need (`needs`).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from raystudy.analysis.claims.registry import Claim, all_claims
from raystudy.analysis.findings.rows import (
    AGREEMENTS,
    AGREES,
    CONFOUNDED,
    DISAGREES,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PAPER_ORDER,
    paper_words,
)

CLAIM_COLUMNS = [
    "claim_id",
    "paper",
    "tier",
    "expects",
    "agreement",
    "rows",
    "measured",
    "detail",
    "paper_answer",
    "quote",
    "where",
    "preset",
]


def claims_table(findings: pd.DataFrame, study: str = "") -> pd.DataFrame:
    """Every claim with its agreement (module docstring), the study's own paper first."""
    rows = [_claim_row(c, _rows_of(findings, c.id)) for c in all_claims()]
    table = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    own = next((p for p in PAPER_ORDER if study.lower().startswith(p)), None)
    rank = {p: (0 if p == own else 1, i) for i, p in enumerate(PAPER_ORDER)}
    order = sorted(range(len(table)), key=lambda i: rank[table.loc[i, "paper"]])
    return table.iloc[order].reset_index(drop=True)


def _rows_of(findings: pd.DataFrame, claim_id: str) -> pd.DataFrame:
    if findings.empty or "claim_id" not in findings.columns:
        return pd.DataFrame()
    return findings[findings["claim_id"] == claim_id]


def _claim_row(found: Claim, rows: pd.DataFrame) -> dict[str, object]:
    base = {
        "claim_id": found.id,
        "paper": found.paper,
        "tier": found.tier,
        "expects": _expects(found),
        "paper_answer": paper_words(found),
        "quote": found.quote,
        "where": found.where,
        "preset": found.preset or "",
    }
    if rows.empty:
        detail = f"no row: this study's design does not test it; it needs {found.needs}"
        return {**base, "agreement": NOT_TESTABLE, "rows": 0, "measured": "", "detail": detail}
    counts = Counter(rows["agreement"])
    if counts[DISAGREES]:
        verdict = DISAGREES
    elif counts[AGREES] == len(rows):
        verdict = AGREES
    elif counts[CONFOUNDED]:
        verdict = CONFOUNDED
    else:
        verdict = INCONCLUSIVE
    measured = Counter(rows["measured"])
    said = "; ".join(f"{k} in {v}" for k, v in measured.most_common())
    detail = ", ".join(f"{counts[a]} {a}" for a in AGREEMENTS if counts[a])
    if verdict in (INCONCLUSIVE, CONFOUNDED):
        why = next((w for w in rows["why"] if isinstance(w, str) and w), "")
        detail += f" ({why})" if why else ""
    return {**base, "agreement": verdict, "rows": len(rows), "measured": said, "detail": detail}


def _expects(found: Claim) -> str:
    if found.expects == "none":
        return f"~ 0 (within +-{found.margin:g})"
    if found.expects == "ordering":
        return f"ordered, each step {found.direction}"
    return f"{found.direction}"


def claim_counts(claims: pd.DataFrame) -> str:
    """`N agree, K disagree, L inconclusive, C confounded, M not testable by this study` over
    the claims of `claims_table`."""
    if claims.empty:
        return "no claims"
    counts = Counter(claims["agreement"])
    words = {
        AGREES: "agree",
        DISAGREES: "disagree",
        INCONCLUSIVE: "inconclusive",
        CONFOUNDED: "confounded",
        NOT_TESTABLE: "not testable by this study",
    }
    parts = [f"{counts[a]} {w}" for a, w in words.items()]
    return f"{len(claims)} claims of the papers: " + ", ".join(parts)
