"""The built-in splits that belong to no single paper module: Dittadi et al. (2021)'s hue
split and the plain i.i.d. split. Montero's and Schott's splits live in `montero` and
`schott`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raystudy.data import dittadi
from raystudy.data.base import GroundTruthDataset
from raystudy.data.split_registry import SplitOptionError, register_split
from raystudy.data.splits import Scenario, Split

# Dittadi et al. (2021), "On the Transfer of Disentangled Representations in Realistic
# Settings", Table 1 and Sec. 5: the encoder never sees 4 of the 12 hues. These are the
# default (`held_out: fixed`) set; `raystudy.data.dittadi` has the paper's and the per-seed ones.
DITTADI_HELD_OUT_HUES = dittadi.FIXED_HELD_OUT
DITTADI_TRAIN_HUES = tuple(h for h in range(dittadi.NUM_HUES) if h not in DITTADI_HELD_OUT_HUES)


@register_split(
    "dittadi_hues",
    requires=("hue",),
    options=("photo", "held_out"),
    seeded=dittadi.uses_seed,
    params=dittadi.run_params,
)
def dittadi_hues(
    ds: GroundTruthDataset,
    photo: bool = False,
    held_out: Any = dittadi.FIXED,
    seed: int | None = None,
) -> Split:
    """Colour OOD (``color_dsprites``; ``finger``, whose ``hue`` is the cube's). OOD1 (probe
    test inside the encoder's hues): A, fit on one hue and test on the other seven; B, fit on
    the 4 highest and test on the 4 lowest (extrapolation); C, fit on alternate hues, test on
    those between (interpolation). OOD2-A: fit on all 8 training hues, test on the 4 the
    encoder never saw. OOD2-B (datasets with a ``real`` domain): fit on the encoder's set
    rendered in ``sim``, test on the same set rendered in ``real``; no factor is shifted.
    Option ``photo: true`` adds ``ood2_photo``, OOD2-B with the test set rendered in the
    ``photo`` domain (:mod:`raystudy.data.photo_domain`): photographed backgrounds, textures
    and light besides the camera effects, a shift input-noise training does not imitate.
    Option ``held_out`` chooses the 4 hues the encoder never sees (:mod:`raystudy.data.dittadi`):
    ``fixed`` (1, 4, 7, 10; the default), ``paper`` (1, 2, 3, 8, the authors' set as the
    loader in their data archive lists it), ``per_seed`` (drawn from the trial's
    ``seed``) or a list of 4 hues. The scenarios read the 8 training hues in ascending order,
    so OOD1-A fits on the lowest (red, hue 0, unless it is held out)."""
    if not isinstance(photo, bool):
        raise SplitOptionError(
            f"split 'dittadi_hues': photo must be true or false, got {photo!r}", "photo"
        )
    if photo and "photo" not in ds.domains:
        raise SplitOptionError(
            f"split 'dittadi_hues': photo: true needs a dataset with a 'photo' domain; "
            f"{ds.name!r} has {', '.join(ds.domains)}",
            "photo",
        )
    hues = ds.factors.sizes[ds.factors.index("hue")]
    if hues != dittadi.NUM_HUES:
        raise ValueError(
            f"split 'dittadi_hues' needs {dittadi.NUM_HUES} hues; {ds.name!r} has {hues}"
        )
    held = dittadi.held_out_hues(held_out, seed)
    train = tuple(h for h in range(dittadi.NUM_HUES) if h not in held)

    def scenario(name: str, fit: Sequence[int], test: Sequence[int]) -> Scenario:
        return Scenario(name, {"hue": list(fit)}, {"hue": list(test)}, ood_factors=("hue",))

    scenarios = [
        scenario("ood1_a", train[:1], train[1:]),
        scenario("ood1_b", train[4:], train[:4]),
        scenario("ood1_c", train[::2], train[1::2]),
        scenario("ood2_a", train, held),
    ]
    if "real" in ds.domains:
        encoder_set = {"hue": list(train)}
        scenarios.append(
            Scenario("ood2_b", encoder_set, encoder_set, domain="real", train_domain="sim")
        )
    if photo:
        encoder_set = {"hue": list(train)}
        scenarios.append(
            Scenario("ood2_photo", encoder_set, encoder_set, domain="photo", train_domain="sim")
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
