"""The plain i.i.d. split: no holdout, probes fitted on a fixed random 80% of the grid."""

from __future__ import annotations

from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.splits.registry import register_split
from raystudy.data.splits.split import Scenario, Split

IID_PROBE_SET: dict[str, Any] = {"random": {"p": 0.8, "seed": 0}}


@register_split("iid")
def iid(ds: GroundTruthDataset) -> Split:
    """No holdout: the encoder sees everything; probes fit on a fixed random 80% of the grid
    and are tested on the other 20%."""
    return Split(
        "iid",
        encoder=None,
        scenarios=[Scenario("iid", IID_PROBE_SET, {"not": IID_PROBE_SET})],
        dataset=ds,
        where="splits.iid",
    )
