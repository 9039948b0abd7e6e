"""The papers' headline claims: one record each in `claims.yaml`, read into typed `Claim`s.

A claim is a sentence of a paper quoted verbatim (from the paper, or where only its abstract or
its code's README is at hand, from that, and `source` says which), what it says in one of three
forms (`expects`), and how this package tests it:

- `effect`: the quantity differs from 0 in `direction` (a two-sided test; agrees when
  significant that way);
- `none`: the paper says there is no effect; tested for equivalence, two one-sided tests
  against `margin` (on the statistic's scale: a correlation's given as |rho| and tested on
  Fisher's z), with `margin_why` saying why that margin;
- `ordering`: the quantity is a chain of differences, each in `direction` (Holm-corrected).

`tier` builds the families the Findings are adjusted in: a paper's primary claims are one
family, its secondary claims another, so that the headline is not drowned by the many rows of
the rest (`raystudy.analysis.findings.rows`).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

#: The papers, in the order their claims are listed.
PAPERS = ("dittadi2021", "montero2021", "montero2022", "schott2022", "locatello2019")
#: How each paper is cited.
CITES = {
    "dittadi2021": "Dittadi et al. 2021",
    "montero2021": "Montero et al. 2021",
    "montero2022": "Montero et al. 2022",
    "schott2022": "Schott et al. 2022",
    "locatello2019": "Locatello et al. 2019",
}
#: What a claim says of its quantity.
Expects = Literal["effect", "none", "ordering"]


class Claim(BaseModel):
    """One headline claim of a paper (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: `<paper>.<name>`, e.g. `schott2022.struggle_composition`.
    id: str = Field(pattern=r"^[a-z0-9]+\.[a-z0-9_]+$")
    paper: Literal["dittadi2021", "montero2021", "montero2022", "schott2022", "locatello2019"]
    #: The sentence, verbatim.
    quote: str = Field(min_length=10)
    #: Where the quote is read: `paper` (the full text), `abstract`, `readme` (the code's
    #: README), or `cited` (another paper's words about it; `where` names which).
    source: Literal["paper", "abstract", "readme", "cited"]
    #: Section, figure or table ("Sec. 5, Fig. 4"), or "abstract".
    where: str
    #: What is measured, in words.
    quantity: str
    #: The test this package runs, in words (and, where no laptop preset tests it, why).
    test: str
    expects: Expects
    #: The sign the quantity takes when the claim holds (`effect`, `ordering`).
    direction: Literal["> 0", "< 0"] | None = None
    #: Equivalence margin (`none`), on the statistic's scale, and why that margin.
    margin: float | None = Field(default=None, gt=0)
    margin_why: str | None = None
    #: The paper's answer in words ("R^2 falls"), never a bare "yes" / "no".
    paper_answer: str
    #: The paper's own numbers, where it gives them.
    paper_numbers: str | None = None
    tier: Literal["primary", "secondary"]
    #: The shipped spec that tests it on a laptop (a path under the repository), or None.
    preset: str | None = None
    #: What a study needs for this claim to be testable (said when it is not).
    needs: str

    @model_validator(mode="after")
    def _consistent(self) -> Claim:
        if not self.id.startswith(self.paper + "."):
            raise ValueError(f"claim {self.id!r}: its id must start with {self.paper + '.'!r}")
        if self.expects in ("effect", "ordering") and self.direction is None:
            raise ValueError(f"claim {self.id!r}: an {self.expects} claim needs a direction")
        if self.expects == "none" and (self.margin is None or not self.margin_why):
            raise ValueError(f"claim {self.id!r}: a claim of no effect needs margin and margin_why")
        return self


class _Registry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claims: list[Claim]


@functools.cache
def all_claims() -> tuple[Claim, ...]:
    """Every claim of `claims.yaml`, in the papers' order (`PAPERS`), then as listed."""
    text = resources.files(__package__).joinpath("claims.yaml").read_text(encoding="utf-8")
    return read_claims(text)


def read_claims(text: str, source: str = "claims.yaml") -> tuple[Claim, ...]:
    """The claims of a registry's YAML text (top-level key `claims:`, a list of records), in
    the papers' order, then as listed: pydantic's ValidationError naming the record and field
    of a bad one, ValueError naming `source` and the ids listed twice."""
    claims = _Registry.model_validate(yaml.safe_load(text)).claims
    ids = [c.id for c in claims]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"{source}: duplicated claim id {', '.join(duplicated)}")
    return tuple(sorted(claims, key=lambda c: PAPERS.index(c.paper)))


def claim(claim_id: str) -> Claim:
    """The claim named `claim_id` (KeyError naming the known ones when there is none)."""
    for found in all_claims():
        if found.id == claim_id:
            return found
    raise KeyError(f"no claim {claim_id!r}; known: {', '.join(c.id for c in all_claims())}")
