"""The final scores a trial of a given config reports: what a search may name besides the
train/* losses, checked against before a study starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from raystudy.keys import DECODER_TEST_ARMS, eval_key, metric_key, transfer_key
from raystudy.metrics.composition import COMPOSITION_OUTPUTS
from raystudy.metrics.probes import probe_applies
from raystudy.metrics.registry import metric_entry
from raystudy.metrics.transfer import TRANSFER_OUTPUTS
from raystudy.metrics.unsupervised import DECODER_OUTPUTS, UNSUPERVISED_OUTPUTS
from raystudy.models.objectives import OBJECTIVES

if TYPE_CHECKING:
    from raystudy.data import Split
    from raystudy.spec import TrialConfig


def decoder_test_arms(arms: Sequence[str], code_is_ground_truth: bool) -> list[str]:
    """The arms of the decoder test (`evaluation.decoder_test_arms`) a model goes through: all,
    but the encoder arm for a model whose code is the ground truth (gt_decoder), which has no
    encoder to train again."""
    return [arm for arm in arms if not (code_is_ground_truth and arm == "encoder")]


def reported_metrics(trial: TrialConfig, split: Split, factor_names: Sequence[str]) -> set[str]:
    """The final scores a trial of this config reports (`raystudy.keys`): what
    `search.metric` may name besides the train/* losses."""
    ev = trial.evaluation
    out: set[str] = set()
    if ev.num_eval_images:
        truth = OBJECTIVES.get(trial.model.objective).code_is_ground_truth
        plain = DECODER_OUTPUTS if truth else UNSUPERVISED_OUTPUTS
        if OBJECTIVES.get(trial.model.objective).triples:
            plain = COMPOSITION_OUTPUTS
        if ev.decoder_test_steps:
            arms = decoder_test_arms(ev.decoder_test_arms, truth)
            plain = (*plain, *(DECODER_TEST_ARMS[arm] for arm in arms))
        out |= {eval_key(k) for k in plain}
        if "heldout" in split.roles:
            out |= {eval_key(k, heldout=True) for k in plain}
    for name in ev.metrics:
        entry = metric_entry(name)
        out |= {metric_key(entry.namespace, k) for k in entry.outputs}
    objective = OBJECTIVES.get(trial.model.objective)
    probes = [p for p in ev.probes if probe_applies(p, objective.code_is_factor_sized)]
    for scenario in split.scenarios if probes else ():
        for probe in probes:
            for score in TRANSFER_OUTPUTS:
                out.add(transfer_key(scenario, probe, score))
                out |= {transfer_key(scenario, probe, score, f) for f in factor_names}
    return out
