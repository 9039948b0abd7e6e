"""Splits: which factor combinations the encoder trains on, and the probes' OOD scenarios.

architecture.md section 4. A :class:`Split` holds one ``encoder`` set and named :class:`Scenario`
s, each a probe-train and a probe-test set in some rendering domain. Every set is a selector
(:mod:`raystudy.data.splits.selectors`), so built-in splits and splits written in a study YAML take
the same validated path. Roles name the sets: ``"encoder"``, ``"<scenario>/train"``,
``"<scenario>/test"``, and ``"heldout"`` for splits scored by reconstruction (Montero et al.
2021, Schott et al. 2022): the combinations the encoder never trains on.

Sampling is uniform over a role's set (intersected with the dataset's feasible states), by
vectorised rejection sampling inside the set's per-factor bounding box: for the usual sets,
intersections of per-factor conditions, the box *is* the set and nothing is rejected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.splits.compiled_sets import CompiledSet, change_factors, laplace_partner
from raystudy.data.splits.selectors import Selector, SelectorError
from raystudy.registry import unknown_name_message

Rng = int | np.random.Generator

# Acceptance of a role is estimated once, from this many draws with a fixed seed, so that
# round sizes (and hence the random stream) never depend on call history.
_ESTIMATE_DRAWS = 20_000
_MAX_DRAWS = 20_000_000  # per sample() call: beyond this the set is too sparse to sample
_MAX_ROUND = 1_000_000
_MAX_PAIR_ROUNDS = 100


R2_VARIANCES = ("sample", "grid")


@dataclass(frozen=True)
class Scenario:
    """One downstream transfer scenario: probes fit on ``train`` and are scored on ``test``.

    - ``domain``: the domain the test set is rendered in, and the train set too unless
      ``train_domain`` says otherwise (Dittadi et al. 2021's OOD2-B fits on ``sim`` and
      tests on ``real``); :attr:`probe_domains` gives the pair.
    - ``ood_factors``: left out of the mean transfer score (the factor the shift is in,
      e.g. ``hue`` for Dittadi et al. 2021's colour OOD).
    - ``r2_variance``: the denominator of each factor's R^2 = 1 - MSE / Var. ``"sample"``:
      the variance of the test set's factor values; ``"grid"``: the variance over the full
      factor grid (uniform over the factor's values), as Schott et al. (2022) do, so a test
      set covering a narrow range of a factor is not penalised for its small variance.
    """

    name: str
    train: Selector
    test: Selector
    domain: str = "sim"
    ood_factors: tuple[str, ...] = ()
    train_domain: str | None = None
    r2_variance: str = "sample"

    @property
    def probe_domains(self) -> tuple[str, str]:
        """``(domain of the probe-train set, domain of the probe-test set)``."""
        return (self.train_domain or self.domain, self.domain)


class Split:
    """An encoder set plus named probe scenarios over one dataset's factor space; with
    ``heldout``, also the role ``"heldout"``: combinations never seen in training, on which
    a reconstruction score is compared against the encoder set's."""

    def __init__(
        self,
        name: str,
        encoder: Selector,
        scenarios: Sequence[Scenario],
        dataset: GroundTruthDataset,
        where: str | None = None,
        heldout: Selector | None = None,
    ) -> None:
        where = where or f"split {name!r}"
        self.name = name
        self.dataset = dataset
        self.encoder: Selector = encoder
        space = dataset.factors
        self._scenarios: dict[str, Scenario] = {}
        self._roles: dict[str, CompiledSet] = {
            "encoder": CompiledSet.build(encoder, space, f"{where}.encoder")
        }
        for scn in scenarios:
            at = f"{where}.scenarios.{scn.name}"
            _check_scenario(scn, dataset, at)
            if scn.name in self._scenarios:
                raise SelectorError(f"{at}: duplicate scenario name {scn.name!r}")
            self._scenarios[scn.name] = scn
            self._roles[f"{scn.name}/train"] = CompiledSet.build(scn.train, space, f"{at}.train")
            self._roles[f"{scn.name}/test"] = CompiledSet.build(scn.test, space, f"{at}.test")
        self.heldout: Selector | None = heldout
        if heldout is not None:
            self._roles["heldout"] = CompiledSet.build(heldout, space, f"{where}.heldout")
        self._acceptance: dict[str, float] = {}

    @property
    def roles(self) -> list[str]:
        return list(self._roles)

    @property
    def scenarios(self) -> dict[str, Scenario]:
        return dict(self._scenarios)

    def selector(self, role: str) -> Selector:
        return self._role(role).selector

    def mask(self, role: str, indices: np.ndarray) -> np.ndarray:
        """Which rows of an ``(N, K)`` index array are in the role's set (and feasible)."""
        self.dataset.factors.validate(indices)
        return self._accept(self._role(role), np.asarray(indices))

    def sample(self, role: str, n: int, rng: Rng) -> np.ndarray:
        """``n`` combinations drawn uniformly from the role's set, ``(n, K)`` int64."""
        return self._sample(role, n, _generator(rng))

    def sample_pairs(self, role: str, n: int, k: int, rng: Rng) -> tuple[np.ndarray, np.ndarray]:
        """Pairs for weak supervision (Locatello et al. 2020, "Weakly-Supervised
        Disentanglement Without Compromises"): ``idx1`` uniform over the role's set, ``idx2``
        equal to it except in exactly ``k`` factors, each changed to a different value.

        The changed factors are drawn uniformly among those that take more than one value in
        the role's set (e.g. the encoder set of ``dittadi_hues`` lets hue vary among the 8
        training hues only), and both members of every pair lie in the set: rows whose
        partner falls outside (possible only for sets that are not a per-factor box, or with
        infeasible states) are redrawn.
        """
        gen = _generator(rng)
        r = self._role(role)
        varying = np.flatnonzero(r.counts > 1)
        if not 1 <= k <= varying.size:
            names = [self.dataset.factors.names[i] for i in varying]
            raise ValueError(
                f"split {self.name!r}, role {role!r}: cannot change k={k} factors; "
                f"{varying.size} factors vary in this set: {names}"
            )
        first = self._sample(role, n, gen)
        second = change_factors(r, first, k, varying, gen)
        bad = np.flatnonzero(~self._accept(r, second))
        for _ in range(_MAX_PAIR_ROUNDS):
            if bad.size == 0:
                return first, second
            first[bad] = self._sample(role, bad.size, gen)
            second[bad] = change_factors(r, first[bad], k, varying, gen)
            bad = bad[~self._accept(r, second[bad])]
        raise ValueError(
            f"split {self.name!r}, role {role!r}: could not find pairs differing in {k} "
            f"factor(s) with both members in the set after {_MAX_PAIR_ROUNDS} rounds"
        )

    def sample_laplace_pairs(
        self, role: str, n: int, rate: float | None, fixed: Sequence[int], rng: Rng
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs as SlowVAE's release draws its two frames (Klindt et al. 2021,
        bethgelab/slow_disentanglement, ``scripts/dataset.py``, ``TupleLoader.truncated_laplace``):
        ``idx1`` uniform over the role's set; each factor of ``idx2`` drawn independently from
        a Laplace density centred on ``idx1``'s value with scale log(size) / rate,

            P(v2 = v | v1) ∝ exp(-|v - v1| rate / log(size)),  v among the factor's values,

        the factors in ``fixed`` (columns; the categorical ones, such as shape) kept, and a
        pair left without any change given one free factor redrawn away from its value.
        ``rate`` None draws a rate per pair uniformly in [1, 10] (the release's ``-1``).

        Values are those of the role's bounding box, so a pair stays in a box-shaped set;
        rows whose partner falls outside the set are redrawn, as in :meth:`sample_pairs`.
        """
        gen = _generator(rng)
        r = self._role(role)
        free = np.array(
            [k for k in np.flatnonzero(r.counts > 1) if k not in set(fixed)], dtype=np.int64
        )
        if free.size == 0:
            names = self.dataset.factors.names
            raise ValueError(
                f"split {self.name!r}, role {role!r}: no factor can change within a pair; "
                f"varying: {[names[k] for k in np.flatnonzero(r.counts > 1)]}, kept: "
                f"{[names[k] for k in fixed]}"
            )
        sizes = np.asarray(self.dataset.factors.sizes, dtype=np.float64)

        def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
            first = self._sample(role, count, gen)
            rates = np.full(count, rate) if rate is not None else gen.uniform(1.0, 10.0, count)
            return first, laplace_partner(r, first, free, sizes, rates, gen)

        first, second = draw(n)
        bad = np.flatnonzero(~self._accept(r, second))
        for _ in range(_MAX_PAIR_ROUNDS):
            if bad.size == 0:
                return first, second
            first[bad], second[bad] = draw(bad.size)
            bad = bad[~self._accept(r, second[bad])]
        raise ValueError(
            f"split {self.name!r}, role {role!r}: could not find Laplace pairs with both "
            f"members in the set after {_MAX_PAIR_ROUNDS} rounds"
        )

    def check_nonempty(self) -> None:
        """Raise :class:`SelectorError`, naming the field, for a role that selects nothing,
        for a ``heldout`` set that shares combinations with the encoder set, or for an OOD
        scenario whose probe-train and probe-test sets share a combination.

        A scenario is OOD when it names ``ood_factors`` and fits and tests its probes in the
        same domain: its test set must then be disjoint from its train set, else the probes
        are scored on points they were fitted on and the "OOD" number measures in-distribution
        error. (Dittadi's OOD2-B fits on ``sim`` and tests the same set in ``real``: allowed.)
        """
        for role in self._roles:
            self._acceptance_rate(role)
        if "heldout" in self._roles:
            combo = self._shared("heldout", "encoder")
            if combo is not None:
                raise SelectorError(
                    f"{self._roles['heldout'].where}: overlaps the encoder set (e.g. {combo}); "
                    "held-out combinations must never be seen in training"
                )
        for name, scn in self._scenarios.items():
            fit_domain, test_domain = scn.probe_domains
            if not scn.ood_factors or fit_domain != test_domain:
                continue
            combo = self._shared(f"{name}/test", f"{name}/train")
            if combo is not None:
                raise SelectorError(
                    f"{self._roles[f'{name}/test'].where}: overlaps the scenario's train set "
                    f"(e.g. {combo}), but the scenario is OOD in {list(scn.ood_factors)}: an "
                    "OOD test set must hold no combination the probes are fitted on (or drop "
                    "ood_factors for an in-distribution scenario)"
                )

    def _shared(self, role: str, other: str) -> dict[str, int] | None:
        """A (feasible) combination in both roles' sets, or None.

        Draws inside the bounding box of the intersection: an empty box proves the sets
        disjoint, and for sets that are boxes (intersections of per-factor conditions) every
        draw is in both, so an overlap is found however small it is.
        """
        a, b = self._role(role), self._role(other)
        both = CompiledSet.build(
            {"all": [a.selector or {}, b.selector or {}]}, self.dataset.factors, a.where
        )
        if (both.counts == 0).any():
            return None
        probe = both.draw_in_box(_ESTIMATE_DRAWS, np.random.default_rng(0))
        inside = probe[self._accept(both, probe)]
        if not len(inside):
            return None
        return dict(zip(self.dataset.factors.names, inside[0].tolist(), strict=True))

    def __repr__(self) -> str:
        return f"Split({self.name!r}, dataset={self.dataset.name!r}, roles={self.roles})"

    # --- internals --------------------------------------------------------------------------

    def _role(self, role: str) -> CompiledSet:
        try:
            return self._roles[role]
        except KeyError:
            raise ValueError(
                f"split {self.name!r}: " + unknown_name_message("role", role, self.roles)
            ) from None

    def _accept(self, r: CompiledSet, idx: np.ndarray) -> np.ndarray:
        inside = r.mask(idx)
        if not self.dataset.every_state_feasible:
            inside &= self.dataset.feasible(idx).cpu().numpy()
        return inside

    def _acceptance_rate(self, role: str) -> float:
        """Fraction of the bounding box in the set; SelectorError when it is (near) zero."""
        if role not in self._acceptance:
            r = self._role(role)
            if (r.counts == 0).any():
                empty = [self.dataset.factors.names[i] for i in np.flatnonzero(r.counts == 0)]
                raise SelectorError(
                    f"{r.where}: selects nothing (no allowed index for factor(s) {empty})"
                )
            probe = r.draw_in_box(_ESTIMATE_DRAWS, np.random.default_rng(0))
            rate = float(self._accept(r, probe).mean())
            if rate == 0.0:
                raise SelectorError(
                    f"{r.where}: selects nothing, or too little to sample: none of "
                    f"{_ESTIMATE_DRAWS} uniform draws from its factor ranges is in the set"
                )
            self._acceptance[role] = rate
        return self._acceptance[role]

    def _sample(self, role: str, n: int, gen: np.random.Generator) -> np.ndarray:
        if n < 0:
            raise ValueError(f"cannot sample {n} combinations")
        if n == 0:
            return np.zeros((0, self.dataset.factors.num_factors), dtype=np.int64)
        r = self._role(role)
        rate = self._acceptance_rate(role)
        kept: list[np.ndarray] = []
        have = drawn = 0
        while have < n:
            if drawn >= _MAX_DRAWS:
                raise ValueError(
                    f"{r.where}: only {have} of {n} combinations found in {drawn} draws; "
                    "the set is too sparse to sample by rejection"
                )
            # Draw ~10% more than the expected need, so one round usually suffices.
            m = min(math.ceil((n - have) / rate * 1.1) + 16, _MAX_ROUND)
            cand = r.draw_in_box(m, gen)
            cand = cand[self._accept(r, cand)]
            kept.append(cand)
            have += cand.shape[0]
            drawn += m
        return np.concatenate(kept)[:n]


def _check_scenario(scn: Scenario, dataset: GroundTruthDataset, where: str) -> None:
    domains = {"domain": scn.domain}
    if scn.train_domain is not None:
        domains["train_domain"] = scn.train_domain
    for field, domain in domains.items():
        if domain not in dataset.domains:
            raise SelectorError(
                f"{where}.{field}: dataset {dataset.name!r} has no domain {domain!r}; "
                f"allowed: {', '.join(dataset.domains)}"
            )
    if scn.r2_variance not in R2_VARIANCES:
        raise SelectorError(
            f"{where}.r2_variance: "
            + unknown_name_message("choice", scn.r2_variance, list(R2_VARIANCES))
        )
    for i, factor in enumerate(scn.ood_factors):
        if factor not in dataset.factors.names:
            raise SelectorError(
                f"{where}.ood_factors[{i}]: "
                + unknown_name_message("factor", factor, dataset.factors.names)
            )


def _generator(rng: Rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise TypeError(f"rng must be an int seed or a numpy Generator, got {rng!r}")
    return np.random.default_rng(int(rng))
