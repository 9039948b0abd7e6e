"""The `dittadi_hues` split of Dittadi et al. (ICLR 2021, "On the Transfer of Disentangled
Representations in Realistic Settings"): which 4 of the 12 hues its encoder never sees, as its
option `held_out` chooses them, the MLflow param that records them on a run, and the split.

What the paper says: "The training set for the VAEs contains 8 randomly chosen color hues"
(Table 1's caption) of 12 linearly spaced ones; OOD2-A tests on the other 4 (Sec. 5). It says
nothing of drawing them per seed or per model, and the robot-finger data the authors
published is one draw for every model: a simulated training set (`finger`) and the 4 other
colours as a separate set (`finger_heldout_colors`). Which 8 colours: the loader the authors
ship inside that data archive says (its docstring opens "This tar archive contains this
README and the datasets used in the paper: A. Dittadi, F. Träuble, ... ICLR 2021"; read from a
public copy of the file, the archive itself being a download). Its colour factor lists them
in RGB as red, rose, magenta, violet, azure, cyan, spring green and green, i.e. hues 0, 330,
300, 270, 210, 180, 150 and 120 degrees: hues 0, 4, 5, 6, 7, 9, 10 and 11 of raystudy's k/12
(0 = red). The 4 held out are then hues 1, 2, 3 and 8 (orange, yellow, chartreuse, blue);
OOD1-A's probes train on red, which the paper names, which fits. ``paper`` is that set (the
images of `finger_heldout_colors` themselves were not seen here).

The choices of `held_out`:

- ``fixed`` (the default): hues 1, 4, 7, 10, every third hue from 1. raystudy's original set;
  a spec that writes ``split: dittadi_hues`` without options means it, as it always has.
- ``paper``: hues 1, 2, 3, 8, the authors' one draw, as their archive's loader lists it.
- ``per_seed``: 4 hues drawn from the trial's seed, a different draw per seed, the same for
  the same seed everywhere (see `per_seed_held_out`).
- a list of 4 distinct hue indices in 0..11: that set.

Whichever it is, the trial's run records the set as the param `HELD_OUT_HUES_PARAM`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.splits.registry import SplitOptionError, register_split
from raystudy.data.splits.split import Scenario, Split

NUM_HUES = 12
#: How many hues the encoder never sees (Dittadi et al. 2021, Table 1 and Sec. 5: 8 of 12).
NUM_HELD_OUT = 4
#: raystudy's original held-out set, what `held_out: fixed` (and no option) means.
FIXED_HELD_OUT = (1, 4, 7, 10)
#: The authors' held-out set: the 12 hues less the 8 of their released training data.
PAPER_HELD_OUT = (1, 2, 3, 8)
FIXED, PAPER, PER_SEED = "fixed", "paper", "per_seed"
HELD_OUT_MODES = (FIXED, PAPER, PER_SEED)
#: The MLflow param of a trial on `dittadi_hues`: its held-out hues, e.g. "1,2,3,8". A
#: consequence of the split's options and the seed, never a design axis of its own.
HELD_OUT_HUES_PARAM = "split.held_out_hues"
#: What the per-seed draw hashes besides the seed and the hue: it keeps this draw apart from
#: every other use of the trial's seed (batches, weights, noise).
_DRAW_SALT = "dittadi_hues/held_out"


def per_seed_held_out(seed: int) -> tuple[int, ...]:
    """The 4 hues a trial with `seed` holds out under ``held_out: per_seed``, ascending.

    Each hue gets the key sha256("<salt>/<seed>/<hue>") and the 4 smallest keys are held out:
    a uniform draw of 4 of the 12 hues for each seed, and one that no library's version can
    change (a numpy generator's stream may), so a saved study's trials keep their sets.
    """
    keys = {
        hue: hashlib.sha256(f"{_DRAW_SALT}/{int(seed)}/{hue}".encode()).digest()
        for hue in range(NUM_HUES)
    }
    return tuple(sorted(sorted(keys, key=keys.__getitem__)[:NUM_HELD_OUT]))


def check_held_out(held_out: Any) -> None:
    """Raise `SplitOptionError` (option ``held_out``) unless `held_out` is one of the modes
    or a list of `NUM_HELD_OUT` distinct hue indices in 0..11."""
    if isinstance(held_out, str):
        if held_out not in HELD_OUT_MODES:
            raise SplitOptionError(
                f"split 'dittadi_hues': held_out must be one of {', '.join(HELD_OUT_MODES)} "
                f"or a list of {NUM_HELD_OUT} hues, got {held_out!r}",
                "held_out",
            )
        return
    hues = list(held_out) if isinstance(held_out, Sequence) else None
    # bool is an int to Python, and True would silently read as hue 1.
    if (
        hues is None
        or len(hues) != NUM_HELD_OUT
        or any(isinstance(h, bool) or not isinstance(h, int) for h in hues)
        or len(set(hues)) != NUM_HELD_OUT
        or not all(0 <= h < NUM_HUES for h in hues)
    ):
        raise SplitOptionError(
            f"split 'dittadi_hues': held_out as a list must hold {NUM_HELD_OUT} distinct hue "
            f"indices in 0..{NUM_HUES - 1} (the paper holds out 4 of 12), got {held_out!r}",
            "held_out",
        )


def held_out_hues(held_out: Any, seed: int | None) -> tuple[int, ...]:
    """The held-out hues, ascending, that option `held_out` names for a trial with `seed`
    (which only ``per_seed`` reads, and then requires)."""
    check_held_out(held_out)
    if held_out == FIXED:
        return FIXED_HELD_OUT
    if held_out == PAPER:
        return PAPER_HELD_OUT
    if held_out == PER_SEED:
        if seed is None:
            raise SplitOptionError(
                "split 'dittadi_hues': held_out: per_seed draws the held-out hues from the "
                "trial's seed, and none was given",
                "held_out",
            )
        return per_seed_held_out(seed)
    return tuple(sorted(held_out))


def uses_seed(options: Mapping[str, Any]) -> bool:
    """Whether the trial's seed decides the split's sets (``held_out: per_seed``)."""
    return options.get("held_out", FIXED) == PER_SEED


def run_params(options: Mapping[str, Any], seed: int) -> dict[str, str]:
    """The MLflow params that record the held-out hues of a trial with `seed`."""
    hues = held_out_hues(options.get("held_out", FIXED), seed)
    return {HELD_OUT_HUES_PARAM: ",".join(str(h) for h in hues)}


# Dittadi et al. (2021), "On the Transfer of Disentangled Representations in Realistic
# Settings", Table 1 and Sec. 5: the encoder never sees 4 of the 12 hues. These are the
# default (`held_out: fixed`) set; `held_out_hues` gives the paper's and the per-seed ones.
DITTADI_HELD_OUT_HUES = FIXED_HELD_OUT
DITTADI_TRAIN_HUES = tuple(h for h in range(NUM_HUES) if h not in DITTADI_HELD_OUT_HUES)


@register_split(
    "dittadi_hues",
    requires=("hue",),
    options=("photo", "held_out"),
    seeded=uses_seed,
    params=run_params,
)
def dittadi_hues(
    ds: GroundTruthDataset,
    photo: bool = False,
    held_out: Any = FIXED,
    seed: int | None = None,
) -> Split:
    """Colour OOD (``color_dsprites``; ``finger``, whose ``hue`` is the cube's). OOD1 (probe
    test inside the encoder's hues): A, fit on one hue and test on the other seven; B, fit on
    the 4 highest and test on the 4 lowest (extrapolation); C, fit on alternate hues, test on
    those between (interpolation). OOD2-A: fit on all 8 training hues, test on the 4 the
    encoder never saw. OOD2-B (datasets with a ``real`` domain): fit on the encoder's set
    rendered in ``sim``, test on the same set rendered in ``real``; no factor is shifted.
    Option ``photo: true`` adds ``ood2_photo``, OOD2-B with the test set rendered in the
    ``photo`` domain (:mod:`raystudy.data.domains.photo`): photographed backgrounds, textures
    and light besides the camera effects, a shift input-noise training does not imitate.
    Option ``held_out`` chooses the 4 hues the encoder never sees (module docstring):
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
    if hues != NUM_HUES:
        raise ValueError(f"split 'dittadi_hues' needs {NUM_HUES} hues; {ds.name!r} has {hues}")
    held = held_out_hues(held_out, seed)
    train = tuple(h for h in range(NUM_HUES) if h not in held)

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
