"""The final scores a trial of a given config reports: what a search may name besides the
train/* losses, checked against before a study starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from raystudy.keys import eval_key, metric_key, transfer_key
from raystudy.metrics import INTERVENTION_METRICS, METRICS, transfer
from raystudy.metrics.registry import metric_outputs
from raystudy.metrics.unsupervised import unsupervised

if TYPE_CHECKING:
    from raystudy.data import Split
    from raystudy.spec import TrialConfig


def reported_metrics(trial: TrialConfig, split: Split, factor_names: Sequence[str]) -> set[str]:
    """The final scores a trial of this config reports (`raystudy.keys`): what
    `search.metric` may name besides the train/* losses."""
    ev = trial.evaluation
    out: set[str] = set()
    if ev.num_eval_images:
        plain = unsupervised.outputs  # type: ignore[attr-defined]
        out |= {eval_key(k) for k in plain}
        if "heldout" in split.roles:
            out |= {eval_key(k, heldout=True) for k in plain}
    for name in ev.metrics:
        fn = METRICS.get(name) if name in METRICS else INTERVENTION_METRICS.get(name)
        namespace = getattr(fn, "namespace", "dis")
        out |= {metric_key(namespace, k) for k in metric_outputs(name)}
    for scenario in split.scenarios if ev.probes else ():
        for probe in ev.probes:
            for score in transfer.outputs:  # type: ignore[attr-defined]
                out.add(transfer_key(scenario, probe, score))
                out |= {transfer_key(scenario, probe, score, f) for f in factor_names}
    return out
