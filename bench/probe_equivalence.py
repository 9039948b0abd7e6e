"""Is the batched torch MLP probe (`mlp_torch`) statistically equivalent to scikit-learn's
(`mlp_sklearn`, the reference)? Measured on a finished study's own encoders and probe sets.

    python -m bench.probe_equivalence STUDY_DIR [--workers 2] [--encoders N] [--json PATH]

For every finished trial run with a logged encoder, the encoder is loaded and every transfer
scenario's probe data is drawn as the trial drew it (`raystudy.probe_data.probe_sets`, the
draws `evaluation.seed` fixes). On each, per factor and for the means:

- scikit-learn at the trial's probe seed: the run's own logged `mlp` scores where scikit-learn
  computed them (`raystudy.probe.mlp`, or no such tag: runs from before it), else fitted
  here; the first run is also refitted here and must give those scores to the last digit,
  which shows that the data here is the trial's;
- the torch probe at the same seed: the run's `mlp_torch` scores where `raystudy rescore
  STUDY --probes mlp_torch` wrote them, else fitted here;
- scikit-learn at the next seed (seed + 1), fitted here: its own seed-to-seed spread.

Reported: |torch - sklearn| against |sklearn(seed + 1) - sklearn(seed)| for R2 and MAE (median,
95th percentile, largest, over every factor and mean of every scenario of every encoder), and
the same per scenario. The torch probe is equivalent in the sense the project accepts when its
distribution is no wider than scikit-learn's own. Minutes: a scikit-learn fit is ~20 s per
scenario at 2,000 points; `--workers` runs encoders in parallel processes.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench._table import Load, markdown, record, write_json

PROBES = ("mlp", "mlp_torch")


def run_jobs(study_dir: Path) -> list[dict[str, Any]]:
    """What each encoder needs: its run id, its config, the logged scores of both probes."""
    from mlflow.tracking import MlflowClient

    from raystudy.spec.url_secrets import expand
    from raystudy.study.folder import StudyInfo, load_study_spec
    from raystudy.study.rescore import match_configs
    from raystudy.tags import MODEL_TAG, probe_tag
    from raystudy.tracking.reader import trial_runs

    info = StudyInfo.read(study_dir)
    spec = load_study_spec(study_dir)
    client = MlflowClient(expand(info.tracking_uri))
    runs = [
        r
        for r in trial_runs(client, info.experiment_id, "attributes.status = 'FINISHED'")
        if r.data.tags.get(MODEL_TAG)
    ]
    configs = match_configs(spec, runs)
    return [
        {
            "uri": info.tracking_uri,
            "run_id": run.info.run_id,
            "name": run.info.run_name,
            "config": configs[run.info.run_id].model_dump(mode="json"),
            "logged": {k: v for k, v in run.data.metrics.items() if k.startswith("transfer/")},
            "logged_dis": {k: v for k, v in run.data.metrics.items() if k.startswith("dis/")},
            # Runs from before the tag, and runs whose mlp scikit-learn computed, log the
            # reference as `mlp`; any other run's `mlp` is not the reference.
            "mlp_is_sklearn": run.data.tags.get(probe_tag("mlp"), "sklearn").startswith("sklearn"),
        }
        for run in sorted(runs, key=lambda r: r.info.run_name)
        if not isinstance(configs[run.info.run_id], str)
    ]


def trial_encoder(job: dict[str, Any], evaluation_update: dict[str, Any] | None = None) -> Any:
    """A run's data, split, config and encoder as its trial set them up, and its codes on the
    CPU: ``(data, split, config, codes(idx, domain="sim"))``. ``evaluation_update`` changes
    the evaluation settings first (other probe sizes)."""
    import torch

    from raystudy.evaluate import evaluation_setup, resolve_encoder
    from raystudy.scoring import encode_codes
    from raystudy.spec import TrialConfig

    config = TrialConfig.model_validate(job["config"])
    ev = config.evaluation.model_copy(update=evaluation_update or {})
    split = config.split if isinstance(config.split, str) else dict(config.split)
    data, split_, config = evaluation_setup(
        config.dataset.name, split, ev, dataset_options=config.dataset.options
    )
    encoder, _ = resolve_encoder(f"runs:/{job['run_id']}/model", job["uri"])

    def codes(idx: np.ndarray, domain: str = "sim") -> np.ndarray:
        return encode_codes(encoder, data, idx, torch.device("cpu"), domain)

    return data, split_, config, codes


def score_encoder(job: dict[str, Any], check: bool) -> dict[str, Any]:
    """Per key `transfer/<scenario>/<probe>/<score>`: sklearn (logged), torch (logged or
    fitted), sklearn at the next seed (fitted); and the refit check when asked."""
    import torch

    from raystudy.keys import transfer_key
    from raystudy.metrics import transfer
    from raystudy.probe_data import probe_sets

    torch.set_num_threads(1)
    data, split_, config, codes = trial_encoder(job)
    ev = config.evaluation
    logged = job["logged"]
    out: dict[str, Any] = {"run": job["name"], "sklearn": {}, "torch": {}, "sklearn_next": {}}

    names, sizes = data.factors.names, data.factors.sizes
    for ps in probe_sets(split_, ev, codes):
        common = dict(
            z_train=ps.z_train,
            y_train=ps.train_idx,
            z_test=ps.z_test,
            y_test=ps.test_idx,
            sizes=sizes,
            names=names,
            ood_factors=ps.scenario.ood_factors,
            r2_variance=ps.scenario.r2_variance,
        )

        def fit(probe: str, seed: int, common: dict[str, Any] = common) -> dict[str, float]:
            return transfer(probe=probe, seed=seed, **common)

        def logged_or_fit(probe: str, name: str, ps_name: str = ps.name) -> dict[str, float]:
            keys = {k: transfer_key(ps_name, probe, k) for k in ("r2", "mae")}
            if all(key in logged for key in keys.values()):
                prefix = transfer_key(ps_name, probe, "")
                return {k[len(prefix) :]: v for k, v in logged.items() if k.startswith(prefix)}
            return fit(name, ev.seed)

        sk = logged_or_fit("mlp" if job["mlp_is_sklearn"] else "mlp_sklearn", "mlp_sklearn")
        if check:
            refit = fit("mlp_sklearn", ev.seed)
            out.setdefault("refit_max_abs_diff", 0.0)
            out["refit_max_abs_diff"] = max(
                out["refit_max_abs_diff"], max(abs(refit[k] - sk[k]) for k in refit)
            )
        out["sklearn"][ps.name] = sk
        out["torch"][ps.name] = logged_or_fit("mlp_torch", "mlp_torch")
        out["sklearn_next"][ps.name] = fit("mlp_sklearn", ev.seed + 1)
    return out


def distribution(values: list[float]) -> dict[str, float]:
    a = np.abs(np.asarray(values, dtype=np.float64))
    a = a[np.isfinite(a)]
    return {
        "n": int(a.size),
        "median": float(np.median(a)),
        "p95": float(np.percentile(a, 95)),
        "max": float(a.max()),
    }


def differences(results: list[dict[str, Any]], score: str, scenario: str | None = None) -> dict:
    """|torch - sklearn| and |sklearn(next seed) - sklearn| over every key of kind `score`."""
    torch_d, seed_d = [], []
    for r in results:
        for scn, ref in r["sklearn"].items():
            if scenario is not None and scn != scenario:
                continue
            for key, value in ref.items():
                if key == score or key.startswith(score + "/"):
                    torch_d.append(r["torch"][scn][key] - value)
                    seed_d.append(r["sklearn_next"][scn][key] - value)
    return {"torch_vs_sklearn": distribution(torch_d), "sklearn_seed_to_seed": distribution(seed_d)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study_dir", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--encoders", type=int, default=None, help="the first N only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    jobs = run_jobs(args.study_dir)[: args.encoders]
    print(f"{len(jobs)} encoders; about {len(jobs) * 2} minutes on {args.workers} workers")
    with ProcessPoolExecutor(args.workers) as pool:
        futures = [pool.submit(score_encoder, job, i == 0) for i, job in enumerate(jobs)]
        results = []
        for i, future in enumerate(futures):
            results.append(future.result())
            print(f"  {i + 1}/{len(jobs)} {results[-1]['run']}", flush=True)
    scenarios = sorted(results[0]["sklearn"]) if results else []
    payload: dict[str, Any] = {
        "study": str(args.study_dir),
        "encoders": len(results),
        "refit_max_abs_diff": results[0].get("refit_max_abs_diff") if results else None,
        "overall": {s: differences(results, s) for s in ("r2", "mae")},
        "per_scenario": {
            scn: {s: differences(results, s, scn) for s in ("r2", "mae")} for scn in scenarios
        },
        "encoders_detail": results,
    }
    print(table(payload))
    write_json(args.json, record("probe_equivalence", started, payload))


def table(payload: dict[str, Any]) -> str:
    rows = []
    for where, block in [("all", payload["overall"]), *payload["per_scenario"].items()]:
        for score in ("r2", "mae"):
            t, s = block[score]["torch_vs_sklearn"], block[score]["sklearn_seed_to_seed"]
            rows.append(
                (
                    where,
                    score,
                    t["n"],
                    f"{t['median']:.4f} / {t['p95']:.4f} / {t['max']:.4f}",
                    f"{s['median']:.4f} / {s['p95']:.4f} / {s['max']:.4f}",
                )
            )
    head = (
        f"{payload['encoders']} encoders; the first refitted with scikit-learn differs from "
        f"its logged scores by at most {payload['refit_max_abs_diff']}\n\n"
    )
    return head + markdown(
        (
            "scenario",
            "score",
            "keys",
            "torch vs sklearn: median / p95 / max",
            "sklearn seed vs seed + 1: median / p95 / max",
        ),
        rows,
        right=2,
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    r2 = payload["overall"]["r2"]
    return [
        (
            f"mlp_torch vs mlp_sklearn, {payload['encoders']} encoders",
            f"R2 p95 {r2['torch_vs_sklearn']['p95']:.4f} against sklearn's own "
            f"{r2['sklearn_seed_to_seed']['p95']:.4f}",
        )
    ]


if __name__ == "__main__":
    main()
