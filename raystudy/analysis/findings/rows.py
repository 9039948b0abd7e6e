"""One Finding as a row of `findings.csv`, and the families of them adjusted.

Every module that answers a paper's question builds its rows with `finding_row`, naming the
claim of `raystudy.analysis.claims` the row tests (or none: a question the paper asks but does
not answer); `adjusted_family` then adjusts the p-values (Holm) within each family, reads what
was measured and whether it agrees with the paper, and gives the power of what is left open;
`order_findings` puts a study's own paper first. The columns:

- `value`, `ci_low`, `ci_high`, `p_value`: the statistic over the trials pooled (its 95%
  interval, two-sided p-value against 0), `p_holm` the same p adjusted over the family;
- `within_*`: the same statistic with the design factors in `held_fixed` held fixed
  (`raystudy.analysis.stats.design`); equal to the pooled one where nothing varies to hold
  fixed or the statistic is a contrast within each model already;
- `carried_by`: the design factor that, held fixed alone, moves the pooled statistic furthest
  towards 0; named where the row is confounded;
- `claim_id`, `tier`, `family`: the claim tested and the Holm family: a paper's primary
  claims are one family, its secondary claims and unclaimed questions another. Each paper is
  its own family because each paper's claims are a hypothesis set of their own; a paper's
  headline (its primary claims, a handful) is not drowned by the many per-probe, per-scenario
  rows of its side questions, which keep a correction among themselves;
- `margin`, `tost_p`, `tost_p_holm`: for a claim of no effect, its equivalence margin and
  the two one-sided tests' p-value (with the design held fixed), adjusted over the family;
- `measured`: `> 0` / `< 0` (the held-fixed statistic significant after adjustment, that
  sign), `~ 0` (equivalent to 0 within the margin), `pooled only` (significant pooled but
  not with the design held fixed: a design factor moves both scores), or `undetermined`;
- `paper_answer`: what the claim says, `> 0`, `< 0` or `~ 0` in the same terms (empty for a
  question without a claim), and `paper` its words and where they stand;
- `agreement`: `agrees`, `disagrees`, `inconclusive`, `confounded` (`MEASURED_AGREEMENT`), or
  `no claim`; `why` says, for inconclusive and confounded rows, what the study could have
  detected and what would settle it;
- `detectable`, `more_seeds`: for an open row, the smallest effect the decisive test could
  detect with 80% power at this n (for a claim of no effect: the smallest margin it could
  confirm), and the seeds to add for the observed one (NaN: none can).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from raystudy.analysis.claims.registry import CITES, PAPERS, Claim, claim
from raystudy.analysis.stats.design import Adjusted
from raystudy.analysis.stats.inference import (
    ALPHA,
    POWER,
    Estimate,
    equivalence_p,
    equivalence_reach,
    holm,
    power,
)

COLUMNS = [
    "paper_id",
    "question",
    "claim_id",
    "tier",
    "family",
    "text",
    "statistic",
    "x",
    "y",
    "group",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "n",
    "n_text",
    "within_value",
    "within_ci_low",
    "within_ci_high",
    "within_p",
    "within_p_holm",
    "held_fixed",
    "carried_by",
    "n_seeds",
    "margin",
    "tost_p",
    "tost_p_holm",
    "detectable",
    "more_seeds",
    "yes_if",
    "measured",
    "paper_answer",
    "agreement",
    "why",
    "paper",
]
FLOATS = (
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "within_value",
    "within_ci_low",
    "within_ci_high",
    "within_p",
    "within_p_holm",
    "margin",
    "tost_p",
    "tost_p_holm",
    "detectable",
    "more_seeds",
)
#: Statistics tested on Fisher's z scale (their power is said as a correlation).
CORRELATIONS = frozenset({"rho"})
#: What was measured.
POSITIVE, NEGATIVE, EQUIVALENT, POOLED_ONLY, UNDETERMINED = (
    "> 0",
    "< 0",
    "~ 0",
    "pooled only",
    "undetermined",
)
MEASURED = (POSITIVE, NEGATIVE, EQUIVALENT, POOLED_ONLY, UNDETERMINED)
#: Whether it agrees with the paper; `NOT_TESTABLE` is said of claims, never of rows.
AGREES, DISAGREES, INCONCLUSIVE, CONFOUNDED, NOT_TESTABLE, NO_CLAIM = (
    "agrees",
    "disagrees",
    "inconclusive",
    "confounded",
    "not testable",
    "no claim",
)
AGREEMENTS = (AGREES, DISAGREES, INCONCLUSIVE, CONFOUNDED, NOT_TESTABLE)
#: Past this many, the seeds an observed effect needs are said as "more than" it: an
#: approximation that far out says only that the effect is out of reach.
MANY_SEEDS = 1000
#: The paper's answer of each kind of claim.
_EXPECTED = {"none": EQUIVALENT}


def finding_row(
    paper_id: str,
    question: str,
    text: str,
    statistic: str,
    yes_if: str,
    paper: str,
    *,
    x: str,
    y: str,
    group: str,
    pooled: Estimate,
    n_text: str | None = None,
    within: Adjusted | None = None,
    n_seeds: int = 0,
    claim_id: str | None = None,
) -> dict[str, object]:
    """A row before adjustment. `pooled` is the statistic over all the question's trials
    (its interval may be a bootstrap one; its p-value the test's); `within` the same with the
    design held fixed (None: nothing to hold fixed, or a contrast within each model: the
    pooled numbers stand for both); `yes_if` '> 0' or '< 0', the sign the claim (or, without
    one, the question) expects of the statistic; `claim_id` the claim it tests (its paper
    answer, margin and tier come from it; `paper`, then, is what this row adds to it, e.g. the
    paper's number for this condition) or None."""
    if yes_if not in ("> 0", "< 0"):
        raise ValueError(f"yes_if must be '> 0' or '< 0', not {yes_if!r}")
    found = claim(claim_id) if claim_id else None
    if found is not None and found.paper != paper_id:
        raise ValueError(f"claim {claim_id!r} is not a claim of {paper_id!r}")
    inner = pooled if within is None or not within.held_fixed else within.estimate
    tier = found.tier if found else "secondary"
    return {
        "paper_id": paper_id,
        "question": question,
        "claim_id": claim_id or "",
        "tier": tier,
        "family": f"{paper_id} {tier}",
        "text": text,
        "statistic": statistic,
        "x": x,
        "y": y,
        "group": group,
        "value": pooled.value,
        "ci_low": pooled.ci_low,
        "ci_high": pooled.ci_high,
        "p_value": pooled.p_value,
        "p_holm": math.nan,
        "n": int(pooled.n),
        "n_text": n_text if n_text is not None else str(int(pooled.n)),
        "within_value": inner.value,
        "within_ci_low": inner.ci_low,
        "within_ci_high": inner.ci_high,
        "within_p": inner.p_value,
        "within_p_holm": math.nan,
        "held_fixed": ", ".join(within.held_fixed) if within is not None else "",
        "carried_by": within.carried_by if within is not None else "",
        "n_seeds": int(n_seeds),
        "margin": found.margin if found is not None and found.margin else math.nan,
        "tost_p": _tost(found, inner, statistic),
        "tost_p_holm": math.nan,
        "detectable": math.nan,
        "more_seeds": math.nan,
        "yes_if": yes_if,
        "measured": "",
        "paper_answer": _answer(found, yes_if),
        "agreement": "",
        "why": "",
        "paper": _paper_words(found, paper),
        # Kept for the power of the decisive test; dropped before the table is written.
        "_se": inner.se,
        "_k": inner.k,
        "_n_within": inner.n,
        "_dof": inner.dof,
    }


def _tost(found: Claim | None, inner: Estimate, statistic: str) -> float:
    if found is None or not found.margin:
        return math.nan
    return equivalence_p(inner, found.margin, correlation=statistic in CORRELATIONS)


def _answer(found: Claim | None, yes_if: str) -> str:
    if found is None:
        return ""
    return _EXPECTED.get(found.expects, yes_if)


def paper_words(found: Claim) -> str:
    """A claim's answer and where it stands: `<answer> (<Author> et al. <year>, <where>)`."""
    return f"{found.paper_answer} ({CITES[found.paper]}, {found.where})"


def _paper_words(found: Claim | None, paper: str) -> str:
    if found is None:
        return paper
    words = paper_words(found)
    return f"{words}; {paper}" if paper else words


def adjusted_family(rows: list[dict[str, object]]) -> pd.DataFrame:
    """The rows as a table: p-values Holm-adjusted within each family, what was measured,
    the agreement with the paper, and the power of every open row."""
    table = pd.DataFrame(rows, columns=[*COLUMNS, "_se", "_k", "_n_within", "_dof"])
    for column in ("p_value", "within_p", "tost_p"):
        table[column] = table[column].astype("float64")
    for _, members in table.groupby("family", sort=False):
        for raw, adjusted in (("p_value", "p_holm"), ("within_p", "within_p_holm")):
            table.loc[members.index, adjusted] = holm(members[raw].to_numpy(dtype=np.float64))
        table.loc[members.index, "tost_p_holm"] = holm(members["tost_p"].to_numpy(np.float64))
    table["measured"] = [measured(row) for _, row in table.iterrows()]
    table["agreement"] = [agreement(row) for _, row in table.iterrows()]
    # What carries a pooled statistic is named only where it decides the verdict.
    table["carried_by"] = table["carried_by"].where(table["measured"] == POOLED_ONLY, "")
    sizes = table.groupby("family")["within_p"].transform(lambda p: int(np.isfinite(p).sum()))
    for i, row in table.iterrows():
        if row["measured"] in (POSITIVE, NEGATIVE, EQUIVALENT):
            continue
        detectable, more = _power(row, int(sizes[i]))
        table.loc[i, ["detectable", "more_seeds"]] = [detectable, more]
        table.loc[i, "why"] = _why(table.loc[i])
    table = table[COLUMNS]
    return table.astype({"n": "int64", "n_seeds": "int64", **dict.fromkeys(FLOATS, "float64")})


def measured(row: pd.Series) -> str:
    """`> 0` / `< 0` when the statistic with the design held fixed is significant after Holm's
    adjustment; `~ 0` when it is not but lies within the claim's margin (two one-sided tests,
    adjusted); `pooled only` when only the pooled statistic is significant; else
    `undetermined`. An effect shown to lie inside the margin is `~ 0` even where it is
    significantly different from 0: it is too small to matter by the claim's own margin."""
    tost = float(row["tost_p_holm"])
    if math.isfinite(tost) and tost < ALPHA:
        return EQUIVALENT
    within_p = float(row["within_p_holm"])
    if math.isfinite(within_p) and within_p < ALPHA:
        return POSITIVE if float(row["within_value"]) > 0.0 else NEGATIVE
    pooled_p = float(row["p_holm"])
    if row["held_fixed"] and math.isfinite(pooled_p) and pooled_p < ALPHA:
        return POOLED_ONLY
    return UNDETERMINED


def agreement(row: pd.Series) -> str:
    """The paper's answer against what was measured: an effect of the claimed sign, or
    equivalence for a claim of none, agrees; an effect of the other sign, equivalence where an
    effect is claimed, or a significant effect not shown to lie within the margin where none
    is claimed, disagrees."""
    expected = str(row["paper_answer"])
    got = str(row["measured"])
    if not expected:
        return NO_CLAIM
    if got == POOLED_ONLY:
        return CONFOUNDED
    if got == UNDETERMINED:
        return INCONCLUSIVE
    return AGREES if got == expected else DISAGREES


def _power(row: pd.Series, tests: int) -> tuple[float, float]:
    """(smallest detectable effect, or for a claim of no effect the smallest margin it could
    confirm; seeds to add for the observed one) of the decisive test, at the Bonferroni level
    ALPHA / tests (the strictest step of Holm's procedure in the row's family)."""
    estimate = Estimate(
        float(row["within_value"]),
        math.nan,
        math.nan,
        float(row["within_p"]),
        float(row["_se"]),
        int(row["_n_within"]),
        int(row["_k"]),
        float(row["_dof"]),
    )
    correlation = row["statistic"] in CORRELATIONS
    alpha = ALPHA / max(tests, 1)
    if row["paper_answer"] == EQUIVALENT:
        return equivalence_reach(estimate, correlation=correlation, alpha=alpha), math.nan
    got = power(estimate, correlation=correlation, alpha=alpha)
    if not math.isfinite(got.trials_needed):
        return got.detectable, math.nan
    n, seeds = int(row["n"]), int(row["n_seeds"]) or int(row["n"])
    # Every seed added repeats the design once: n / seeds trials.
    more = max(0.0, got.trials_needed - estimate.n) / (n / seeds)
    return got.detectable, float(math.ceil(more))


def _why(row: pd.Series) -> str:
    """What an open row lacks, in words (the numbers are in `detectable`, `more_seeds`)."""
    size = "|rho|" if row["statistic"] in CORRELATIONS else "an effect"
    if row["measured"] == POOLED_ONLY:
        carrier = row["carried_by"] or "a design factor"
        return (
            f"significant pooled, not with {row['held_fixed']} held fixed: {carrier} moves both;"
            " a design that varies the tested quantity within each level of it would separate"
            " them"
        )
    detectable = float(row["detectable"])
    if not math.isfinite(detectable):
        return "no standard error: too few trials, or none that differ"
    if row["paper_answer"] == EQUIVALENT:
        return (
            f"this n confirms no effect only within +-{detectable:.2f} ({POWER:.0%} power),"
            f" wider than the claim's margin {float(row['margin']):.2f}"
        )
    text = f"this n detects {size} >= {detectable:.2f} ({POWER:.0%} power)"
    more = float(row["more_seeds"])
    if math.isfinite(more) and more > MANY_SEEDS:
        text += f"; the observed one needs over {MANY_SEEDS:,} more seeds"
    elif math.isfinite(more):
        text += f"; the observed one needs ~{more:.0f} more seeds"
    return text


#: The order a study's Findings are shown in when its name names none of the papers.
PAPER_ORDER = PAPERS


def order_findings(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """The study's own paper's Findings first (a study named after a paper, `montero2021`,
    `schott2022_small`), then the others in `PAPER_ORDER`."""
    own = next((p for p in PAPER_ORDER if study.lower().startswith(p)), None)
    order = [own, *(p for p in PAPER_ORDER if p != own)] if own else list(PAPER_ORDER)
    rank = {p: i for i, p in enumerate(order)}
    keys = table["paper_id"].map(lambda p: rank.get(p, len(rank)))
    return table.iloc[np.argsort(keys.to_numpy(), kind="stable")].reset_index(drop=True)
