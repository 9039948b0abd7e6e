"""What changed since a study ran, said before `resume` trains anything: the code version, and
the data and split each trial reads (their digests, `raystudy.lineage.data_input`).

A resumed study keeps its finished trials and trains the rest with the code and data of now:
if either changed, its trials no longer come from one experiment, and a user should know
before the resumed trials are mixed with the finished ones in one analysis.
"""

from __future__ import annotations

import json
from collections import defaultdict

from mlflow.tracking import MlflowClient

from raystudy.data import get_dataset
from raystudy.data.splits.registry import split_tag
from raystudy.lineage import data_input
from raystudy.scoring import build_split
from raystudy.spec import StudySpec
from raystudy.spec.url_secrets import expand
from raystudy.study.folder import StudyInfo
from raystudy.tags import VERSION_TAG
from raystudy.tracking.reader import trial_runs
from raystudy.tracking.retry import check_reachable, refusing


def resume_warnings(info: StudyInfo, spec: StudySpec, version_now: str) -> list[str]:
    """One line per difference between what the study's runs recorded and what a resume
    would run with now (empty when nothing differs or nothing was recorded)."""
    # Checked first: MLflow's own client would retry a store that is down for minutes.
    with refusing(info.tracking_uri):
        check_reachable(info.tracking_uri)
        client = MlflowClient(expand(info.tracking_uri))
        ran_with = client.get_run(info.parent_run_id).data.tags.get(VERSION_TAG)
    said = []
    if ran_with and ran_with != version_now:
        said.append(
            f"the study ran with raystudy {ran_with} and resumes with {version_now}: its "
            "finished trials are not run again, so the study will mix results of both versions"
        )
    recorded: dict[str, set[str]] = defaultdict(set)
    for run in trial_runs(client, info.experiment_id):
        for entry in run.inputs.dataset_inputs if run.inputs else ():
            recorded[entry.dataset.name].add(entry.dataset.digest)
    if not recorded:
        return said
    for name, digests in sorted(current_digests(spec).items()):
        new = digests - recorded.get(name, digests)
        if new:
            said.append(
                f"the data or split {name} is not what the study's trials recorded (digest "
                f"now {', '.join(sorted(new))}, recorded {', '.join(sorted(recorded[name]))}): "
                "trials resumed now train and are scored on different sets than the finished "
                "ones"
            )
    return said


def current_digests(spec: StudySpec) -> dict[str, set[str]]:
    """Each dataset input name of the spec's trials -> the digests its data and split have
    now (several when a split depends on the seed)."""
    datasets = {}
    out: dict[str, set[str]] = defaultdict(set)
    seen = set()
    for config in spec.trials():
        key = json.dumps(
            [config.dataset.name, config.dataset.options, config.split, config.seed],
            sort_keys=True,
            default=str,
        )
        if key in seen:
            continue
        seen.add(key)
        dataset_key = json.dumps([config.dataset.name, config.dataset.options], default=str)
        if dataset_key not in datasets:
            datasets[dataset_key] = get_dataset(config.dataset.name, **config.dataset.options)
        split = build_split(config, datasets[dataset_key])
        data = data_input(
            config.dataset.name, config.dataset.options, split_tag(config.split), split
        )
        out[data.name].add(data.digest)
    return dict(out)
