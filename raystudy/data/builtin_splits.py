"""The built-in splits that belong to no single paper module: Dittadi et al. (2021)'s hue
split and the plain i.i.d. split. Montero's and Schott's splits live in `montero` and
`schott`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raystudy.data.base import GroundTruthDataset
from raystudy.data.split_registry import register_split
from raystudy.data.splits import Scenario, Split

# Dittadi et al. (2021), "On the Transfer of Disentangled Representations in Realistic
# Settings", section 4: the encoder never sees 4 of the 12 hues.
DITTADI_HELD_OUT_HUES = (1, 4, 7, 10)
DITTADI_TRAIN_HUES = tuple(h for h in range(12) if h not in DITTADI_HELD_OUT_HUES)


@register_split("dittadi_hues", requires=("hue",))
def dittadi_hues(ds: GroundTruthDataset) -> Split:
    """Colour OOD (``color_dsprites``; ``finger``, whose ``hue`` is the cube's). OOD1 (probe
    test inside the encoder's hues): A, fit on one hue and test on the other seven; B, fit on
    the 4 highest and test on the 4 lowest (extrapolation); C, fit on alternate hues, test on
    those between (interpolation). OOD2-A: fit on all 8 training hues, test on the 4 the
    encoder never saw. OOD2-B (datasets with a ``real`` domain): fit on the encoder's set
    rendered in ``sim``, test on the same set rendered in ``real``; no factor is shifted."""
    train = DITTADI_TRAIN_HUES

    def scenario(name: str, fit: Sequence[int], test: Sequence[int]) -> Scenario:
        return Scenario(name, {"hue": list(fit)}, {"hue": list(test)}, ood_factors=("hue",))

    scenarios = [
        scenario("ood1_a", train[:1], train[1:]),
        scenario("ood1_b", train[4:], train[:4]),
        scenario("ood1_c", train[::2], train[1::2]),
        scenario("ood2_a", train, DITTADI_HELD_OUT_HUES),
    ]
    if "real" in ds.domains:
        encoder_set = {"hue": list(train)}
        scenarios.append(
            Scenario("ood2_b", encoder_set, encoder_set, domain="real", train_domain="sim")
        )
    return Split(
        "dittadi_hues",
        encoder={"hue": list(train)},
        scenarios=scenarios,
        dataset=ds,
        where="splits.dittadi_hues",
    )


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
