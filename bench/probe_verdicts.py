"""Does any Finding change when the MLP probe is computed by its batched torch twin?

    raystudy rescore STUDY --probes mlp_torch        # writes transfer/*/mlp_torch/* to the runs
    python -m bench.probe_verdicts STUDY_DIR [--json PATH]

The study's results table is analysed twice with the same settings as `raystudy analyze`:
as logged (`mlp` computed by scikit-learn on the CPU) and with every `transfer/*/mlp/*` score
replaced by the run's `transfer/*/mlp_torch/*` one, which is what the study would have logged
had its trials scored on a GPU (`evaluation.device` auto). Every Findings row is matched by
its question and cell; reported: the rows whose measured direction or agreement with the paper
moved, and the largest change of an estimate among the rows that read the MLP probe.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from bench._table import Load, markdown, record, write_json

#: What a Findings row answers; a verdict is these.
VERDICT = ("measured", "agreement")
#: What identifies a row across the two analyses.
ROW = ("paper_id", "question", "x", "y", "group")


def as_torch(frame: pd.DataFrame) -> pd.DataFrame:
    """The results table with every `mlp` transfer score replaced by the run's `mlp_torch`
    one; fails when a run lacks one (the rescore has not run, or not finished)."""
    out = frame.copy()
    replaced = 0
    for column in frame.columns:
        if "/mlp/" in column and column.startswith("metrics.transfer/"):
            twin = column.replace("/mlp/", "/mlp_torch/")
            if twin not in frame.columns:
                raise SystemExit(
                    f"{twin} is missing: run `raystudy rescore STUDY --probes mlp_torch`"
                )
            had = frame[column].notna()
            if frame.loc[had, twin].isna().any():
                raise SystemExit(f"{twin} is missing in some runs: finish the rescore first")
            out[column] = frame[twin]
            replaced += 1
    if not replaced:
        raise SystemExit("the study logged no mlp transfer scores")
    return without_twin(out)


def without_twin(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as the study logged it: the rescored `mlp_torch` columns would be a third
    probe in every table and Holm family."""
    return frame.drop(columns=[c for c in frame.columns if "/mlp_torch/" in c])


def compare(study_dir: Path) -> dict[str, Any]:
    from raystudy.analysis.core.results import load_results
    from raystudy.analysis.pipeline import Settings, compute
    from raystudy.tags import column, probe_tag

    frame = load_results(study_dir)
    tag = column(probe_tag("mlp"))
    if tag in frame.columns and not frame[tag].fillna("sklearn").str.startswith("sklearn").all():
        raise SystemExit(
            f"{study_dir}: some runs' mlp scores are not scikit-learn's ({tag}); this compares "
            "a study scored with the reference against the twin"
        )
    settings = Settings()
    logged = compute(without_twin(frame), settings).findings
    torch_ = compute(as_torch(frame), settings).findings
    key = list(ROW)
    logged, torch_ = (t.assign(**{k: t[k].fillna("") for k in key}) for t in (logged, torch_))
    both = logged.merge(torch_, on=key, how="outer", suffixes=("", "_torch"), indicator=True)
    moved = both[
        (both["_merge"] != "both")
        | (both[VERDICT[0]] != both[VERDICT[0] + "_torch"])
        | (both[VERDICT[1]] != both[VERDICT[1] + "_torch"])
    ]
    text = both["x"].astype(str) + " " + both["y"].astype(str)
    reads_mlp = both["_merge"].eq("both") & text.str.contains("/mlp/", regex=False)
    est = (pd.to_numeric(both["value"]) - pd.to_numeric(both["value_torch"])).abs()
    return {
        "study": str(study_dir),
        "rows": len(logged),
        "rows_torch": len(torch_),
        "rows_reading_mlp": int(reads_mlp.sum()),
        "moved": moved[[*key, *VERDICT, *(v + "_torch" for v in VERDICT)]].to_dict("records"),
        "largest_estimate_change_mlp_rows": float(est[reads_mlp].max())
        if reads_mlp.any()
        else None,
        "verdicts": both[both["_merge"] == "both"][[*key, *VERDICT, "value", "value_torch"]]
        .assign(reads_mlp=reads_mlp[both["_merge"] == "both"])
        .to_dict("records"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    payload = compare(args.study_dir)
    print(
        f"{payload['rows']} Findings rows ({payload['rows_reading_mlp']} read the MLP probe); "
        f"{len(payload['moved'])} changed verdict; largest change of an MLP row's estimate: "
        f"{payload['largest_estimate_change_mlp_rows']}"
    )
    if payload["moved"]:
        rows = [tuple(str(r.get(k)) for k in r) for r in payload["moved"]]
        print(markdown(tuple(payload["moved"][0]), rows))
    write_json(args.json, record("probe_verdicts", started, payload))


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            "Findings with mlp_torch in place of mlp",
            f"{len(payload['moved'])} of {payload['rows']} verdicts changed",
        )
    ]


if __name__ == "__main__":
    main()
