"""The analysis as one self-contained HTML file: tables, figures (embedded as base64 PNG),
the study spec and run counts. It loads nothing from anywhere, so it opens offline, from an
MLflow artifact download or an e-mail attachment alike."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from raystudy.analysis.figures.study import StudyFigure
from raystudy.analysis.findings.claims import claim_counts
from raystudy.analysis.findings.rows import NOT_TESTABLE
from raystudy.analysis.findings.text import NO_FINDINGS, finding_parts
from raystudy.analysis.tables.correlations import pivot
from raystudy.analysis.tables.selection import regret_pivot
from raystudy.keys import TRANSFER
from raystudy.tags import RUN_FINISHED

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1400px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
td small { color: #555; white-space: nowrap; } .blank { color: #999; text-align: center; }
.note { color: #555; font-size: 13px; max-width: 60em; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #444; max-width: 60em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: 12px; }
details summary { cursor: pointer; font-weight: 600; margin: .4em 0; }
.scroll { overflow-x: auto; }
ul.findings li { margin: .3em 0; max-width: 70em; }
"""


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report shows; computed elsewhere, only formatted here."""

    study: str
    status_counts: pd.Series
    planned_trials: int
    unfinished: pd.DataFrame
    #: Scores finished runs logged as +-inf, left out of every table (`results.nonfinite`).
    nonfinite: pd.DataFrame
    correlations: pd.DataFrame
    proxy_correlations: pd.DataFrame
    selection: pd.DataFrame
    figures: Sequence[StudyFigure]
    spec_text: str
    settings: dict[str, object] = field(default_factory=dict)
    min_trials: int = 5
    #: `r2_table.csv` and `r2_modularity.csv`; empty for a study of no Schott or Montero 2022
    #: split.
    r2: pd.DataFrame = field(default_factory=pd.DataFrame)
    r2_modularity: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: `findings.csv`: the papers' questions this study answers, shown first.
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: `claims.csv`: every claim of the papers and this study's agreement with it.
    claims: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: What computed each probe's scores, in how many runs (`results.probe_implementations`).
    probes: pd.DataFrame = field(default_factory=pd.DataFrame)


def _e(value: object) -> str:
    return html.escape(str(value))


def _colour(rho: float) -> str:
    """A blue-white-red background for rho in [-1, 1] (light, so text stays readable)."""
    if not np.isfinite(rho):
        return "#f4f4f4"
    strength = min(1.0, abs(rho)) * 0.55
    r, g, b = (255, 255 - int(200 * strength), 255 - int(200 * strength))
    if rho < 0:
        r, b = b, r
    return f"rgb({r},{g},{b})"


def _simple_table(frame: pd.DataFrame, left: Sequence[str] = ()) -> str:
    head = "".join(f'<th class="{"l" if c in left else ""}">{_e(c)}</th>' for c in frame.columns)
    rows = []
    for _, row in frame.iterrows():
        cells = "".join(
            f'<td class="{"l" if c in left else ""}">{_e(_fmt(row[c]))}</td>' for c in frame.columns
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "" if not np.isfinite(value) else f"{value:.4g}"
    return str(value)


def _header(name: str) -> str:
    """`transfer/ood1_a/gbt/mae` -> a compact, wrapped column header."""
    return "<br>".join(_e(p) for p in name.removeprefix(TRANSFER).split("/"))


def correlation_html(table: pd.DataFrame, group: str, transpose: bool = False) -> str:
    """One group's rho [CI] n cells, rows x and columns y (or the reverse), shaded by rho."""
    rho, low, high, n = (pivot(table, group, v) for v in ("rho", "ci_low", "ci_high", "n"))
    if transpose:
        rho, low, high, n = rho.T, low.T, high.T, n.T
    if rho.empty:
        return '<p class="note">No pairs of scores to correlate.</p>'
    corner = "y \\ x" if transpose else "x \\ y"
    head = f'<th class="l">{corner}</th>' + "".join(f"<th>{_header(c)}</th>" for c in rho.columns)
    rows = []
    for x in rho.index:
        cells = [f'<th class="l">{_e(x)}</th>']
        for y in rho.columns:
            r, lo, hi, k = rho.at[x, y], low.at[x, y], high.at[x, y], n.at[x, y]
            if not np.isfinite(k):  # a pair not correlated (an NLL against itself)
                cells.append('<td class="blank"></td>')
                continue
            if not np.isfinite(r):
                cells.append(f'<td class="blank">&ndash;<br><small>n={int(k)}</small></td>')
                continue
            ci = f"[{lo:+.2f}, {hi:+.2f}]" if np.isfinite(lo) else "[no CI]"
            weight = "font-weight:bold;" if np.isfinite(lo) and (lo > 0 or hi < 0) else ""
            cells.append(
                f'<td style="background:{_colour(r)};{weight}">{r:+.2f}<br>'
                f"<small>{ci} n={int(k)}</small></td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(rows)}</table></div>'


def selection_html(table: pd.DataFrame, group: str) -> str:
    """Regret per selector (rows) and scenario/probe (columns), with random choice and the
    best error for scale."""
    regret = regret_pivot(table, group)
    if regret.empty:
        return '<p class="note">No transfer/*/mae score to select for.</p>'
    sub = table[table["group"] == group].assign(target=lambda t: t["scenario"] + "/" + t["probe"])
    first = sub.drop_duplicates("target").set_index("target")
    chosen = sub.pivot(index="selector", columns="target", values="chosen")
    head = '<th class="l">chosen by</th>' + "".join(f"<th>{_e(c)}</th>" for c in regret.columns)
    rows = []
    for selector in regret.index:
        cells = [f'<th class="l">{_e(selector)}</th>']
        for target in regret.columns:
            v = regret.at[selector, target]
            if not np.isfinite(v):
                cells.append('<td class="blank">&ndash;</td>')
            else:
                tip = _e(chosen.at[selector, target])
                cells.append(f'<td title="chosen: {tip}">{v:.4f}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    for label, column in (("random choice (mean)", "random_regret"), ("best MAE", "best_mae")):
        cells = [f'<th class="l"><i>{label}</i></th>']
        for target in regret.columns:
            v = first.at[target, column]
            cells.append(
                f"<td><i>{v:.4f}</i></td>" if np.isfinite(v) else '<td class="blank">&ndash;</td>'
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(rows)}</table></div>'


def r2_html(r2: pd.DataFrame, modularity: pd.DataFrame) -> str:
    """Schott et al.'s table, and Montero et al. 2022's encoder test (scenario `test`): mean
    R^2 +- seed sd (n) per model (rows, by
    dataset and probe) and split (columns), then the modularity summary; '' when empty."""
    main = r2[r2["scenario"] == "test"] if not r2.empty else r2
    if main.empty:
        return ""
    cell = main.apply(
        lambda r: (
            f"{r['r2']:.3f}"
            + (f" ± {r['r2_std']:.3f}" if np.isfinite(r["r2_std"]) else "")
            + f" (n={r['n']})"
        ),
        axis=1,
    )
    splits = list(pd.unique(main["split"]))
    wide = (
        main.assign(cell=cell)
        .pivot(index=["dataset", "probe", "model"], columns="split", values="cell")
        .reindex(columns=splits)
        .fillna("")
        .reset_index()
    )
    parts = [
        '<h2>R&sup2; per model and split (Schott et al. 2022)</h2><p class="note">R&sup2; of '
        "the probes over all factors on each split's test set (variance over the full factor "
        "grid), mean &plusmn; standard deviation over seeds (n runs); on montero2022_* splits "
        "the test set is the held-out combinations: Montero et al. 2022's encoder test. "
        "Per-factor values and every scenario: <code>r2_table.csv</code>.</p>",
        f'<div class="scroll">{_simple_table(wide, left=("dataset", "probe", "model"))}</div>',
    ]
    if not modularity.empty:
        parts.append(
            '<h3>Modularity: one factor out of range</h3><p class="note">In each '
            "<code>single_&lt;factor&gt;</code> scenario only that factor leaves its training "
            "range: its R&sup2; (<code>ood_r2</code>) beside the mean R&sup2; of the other "
            "factors (<code>others_r2</code>), over seeds (<code>r2_modularity.csv</code>).</p>"
            + '<div class="scroll">'
            + _simple_table(modularity, left=("model", "split", "dataset", "probe", "ood_factor"))
            + "</div>"
        )
    return "".join(parts)


#: How each paper's Findings are headed in the report.
PAPER_NAMES = {
    "dittadi2021": "Dittadi et al. (2021)",
    "montero2021": "Montero et al. (2021)",
    "montero2022": "Montero et al. (2022)",
    "schott2022": "Schott et al. (2022)",
    "locatello2019": "Locatello et al. (2019)",
}


_UNTESTED = ("claim_id", "detail", "preset")


def claims_html(claims: pd.DataFrame) -> str:
    """The papers' claims, each with this study's agreement (`claims.csv`), opened by the
    counts; claims the study cannot test folded away."""
    if claims.empty:
        return ""
    intro = (
        '<h2>The papers\' claims</h2><p class="note">Every headline claim of the papers '
        "(<code>raystudy claims</code>), against this study's Findings rows that test it "
        "(<code>claims.csv</code>): <i>agrees</i> only when every row agrees; <i>disagrees</i> "
        "when any row measures the opposite sign, an effect where the paper claims none, or "
        "none where it claims one; <i>confounded</i> when a design factor moves both scores; "
        "<i>inconclusive</i> when the rows cannot tell.</p>"
        f"<p><b>{_e(claim_counts(claims))}</b></p>"
    )
    columns = ["claim_id", "agreement", "measured", "detail", "paper_answer"]
    tested = claims[claims["agreement"] != NOT_TESTABLE]
    untested = claims[claims["agreement"] == NOT_TESTABLE]
    parts = [intro]
    if not tested.empty:
        parts.append(_simple_table(tested[columns], left=tuple(columns)))
    if not untested.empty:
        parts.append(
            f"<details><summary>{len(untested)} claims this study cannot test</summary>"
            + _simple_table(
                untested[["claim_id", "detail", "preset"]], left=("claim_id", "detail", "preset")
            )
            + "</details>"
        )
    return "".join(parts)


def findings_html(findings: pd.DataFrame) -> str:
    """The Findings section: one line per answered question (`finding_parts`), its agreement
    with the paper in bold, under its paper's name; a note when the study answers none."""
    intro = (
        "<h2>Findings</h2><p class=\"note\">The papers' questions this study's trials can "
        "answer, from its own numbers (<code>findings.csv</code>): what was measured "
        "(<i>&gt; 0</i> or <i>&lt; 0</i> when the statistic with the study's design factors held "
        "fixed is significant after adjustment; <i>~ 0</i> when two one-sided tests place it "
        "within the claim's margin; <i>pooled only</i> when only the pooled statistic is; "
        "<i>undetermined</i> otherwise) beside the paper's answer, and whether they agree. "
        "Then the statistic over the trials pooled, with its 95% interval, its p-value and the "
        "p-value adjusted (Holm) within its family (each paper's primary claims one family, its "
        "secondary claims and unclaimed questions another), and n; the same with the design "
        "held fixed (the grid axes that vary; seeds are replicates); for an open row, the "
        "effect this n could detect with the same test. MAE is an error, so disentanglement "
        "that helps transfer has rho &lt; 0. Beside each, the paper's words.</p>"
    )
    if findings.empty:
        return f'{intro}<p class="note">{_e(NO_FINDINGS)}</p>'
    parts = [intro]
    papers = list(pd.unique(findings["paper_id"]))
    for paper in papers:
        if len(papers) > 1:
            parts.append(f"<h3>{_e(PAPER_NAMES.get(paper, paper))}</h3>")
        items = []
        for _, row in findings[findings["paper_id"] == paper].iterrows():
            question, answer, rest = finding_parts(row)
            items.append(f"<li>{_e(question)} <b>{_e(answer)}</b>: {_e(rest)}</li>")
        parts.append(f'<ul class="findings">{"".join(items)}</ul>')
    return "".join(parts)


def _groups(table: pd.DataFrame) -> list[str]:
    return list(pd.unique(table["group"])) if not table.empty else []


def _grouped(table: pd.DataFrame, render: Callable[[pd.DataFrame, str], str]) -> str:
    """The `all` group open, every other group folded."""
    parts = []
    for group in _groups(table):
        body = render(table, group)
        if group == "all":
            parts.append(f"<h3>all finished trials</h3>{body}")
        else:
            parts.append(f"<details><summary>{_e(group)}</summary>{body}</details>")
    return "".join(parts) or '<p class="note">Nothing to show.</p>'


def _figure_html(fig: StudyFigure) -> str:
    png = fig.png()
    if png is None:
        return f'<p class="note"><b>{_e(fig.name)}</b> not drawn: {_e(fig.reason)}.</p>'
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{_e(fig.name)}" src="data:image/png;base64,{data}">'
        f"<figcaption><b>{_e(fig.name)}</b>: {_e(fig.caption)}</figcaption></figure>"
    )


def render_report(inputs: ReportInputs) -> str:
    """The whole report as an HTML string."""
    counts = inputs.status_counts
    finished = int(counts.get(RUN_FINISHED, 0))
    runs_table = _simple_table(
        pd.DataFrame({"status": counts.index, "runs": counts.to_numpy()}), left=("status",)
    )
    unfinished = (
        "<h3>Runs not analysed</h3>"
        + _simple_table(inputs.unfinished, left=("trial", "status", "error"))
        if not inputs.unfinished.empty
        else ""
    )
    nonfinite = (
        "<h3>Scores left out as infinite</h3>"
        + _simple_table(inputs.nonfinite, left=("score", "trials"))
        if not inputs.nonfinite.empty
        else ""
    )
    probes = (
        '<h3>How the probes were computed</h3><p class="note">Per probe, what fitted it '
        "(the runs' <code>raystudy.probe.*</code> tags). The MLP probe's reference is "
        "scikit-learn's own; its batched torch twin, which computes <code>mlp</code>, was "
        "shown equivalent to it (docs/performance/scoring.md). A probe computed two ways in "
        "one study mixes the two in every table.</p>"
        + _simple_table(inputs.probes, left=("probe", "computed by"))
        if not inputs.probes.empty
        else ""
    )
    settings = ", ".join(f"{k}={v}" for k, v in inputs.settings.items())
    body = f"""
<h1>Study <code>{_e(inputs.study)}</code>: analysis</h1>
<p class="note">{_e(settings)}</p>
{claims_html(inputs.claims)}
{findings_html(inputs.findings)}
<h2>Runs</h2>
<p>{finished} of {inputs.planned_trials} planned trials finished; only finished trials are
analysed. Runs by MLflow status:</p>
{runs_table}
{unfinished}
{nonfinite}
{probes}
<h2>Rank correlations with OOD transfer</h2>
<p class="note">Spearman's rho between each score (rows) and each transfer score (columns,
<code>scenario / probe / score</code>) across trials, with its 95% bootstrap interval
(trials resampled) and the number of trials n. MAE is an error (lower is better) and R&sup2; a
score (higher is better), so a metric that helps transfer correlates negatively with MAE and
positively with R&sup2;. Bold: the interval excludes 0. A dash: fewer than
{inputs.min_trials} trials, or a score that does not vary. Cf. Dittadi et al. (2021), Fig. 5.
A row <code>train.input_noise</code> (a study that varies input noise; 1 with noise, 0
without) is Fig. 6's top row. Columns <code>eval/recon_heldout</code> (per split,
<code>@&lt;cell&gt;</code>; splits that hold combinations out) are the reconstruction NLL of
combinations never trained on, an error like MAE (Montero et al. 2021).
</p>
{_grouped(inputs.correlations, correlation_html)}
<h2>Model selection: regret in transfer MAE</h2>
<p class="note">For each scenario and probe, the transfer MAE of the model a score ranks
first (highest ELBO, lowest reconstruction NLL, highest disentanglement or downstream score)
minus the lowest MAE of any model: 0 means the score picked the best model. The
<i>random choice</i> row is the mean MAE minus the best, what picking a model blindly costs.
Hover a cell for the model chosen.</p>
{_grouped(inputs.selection, selection_html)}
{r2_html(inputs.r2, inputs.r2_modularity)}
<h2>Unsupervised scores vs disentanglement</h2>
<p class="note">Rank correlation of ELBO, reconstruction (NLL, lower is better) and
downstream accuracy (columns) with each disentanglement metric (rows). Cf. Dittadi et al.
(2021), Fig. 3 right.</p>
{_grouped(inputs.proxy_correlations, partial(correlation_html, transpose=True))}
<h2>Figures</h2>
{"".join(_figure_html(f) for f in inputs.figures)}
<h2>Study spec</h2>
<pre>{_e(inputs.spec_text)}</pre>
"""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>raystudy analysis: {_e(inputs.study)}</title><style>{STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )
