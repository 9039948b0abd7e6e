"""What each registered dataset is: factors, sizes, domains and how to get it (for
``raystudy datasets``). File datasets are described from their official grid, without a file."""

from __future__ import annotations

from dataclasses import dataclass

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.registry import DATASETS


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    summary: str
    factors: tuple[tuple[str, int], ...]
    domains: tuple[str, ...]
    channels: int | None
    needs_file: bool

    @property
    def total(self) -> int:
        out = 1
        for _, size in self.factors:
            out *= size
        return out


def describe(name: str) -> DatasetInfo:
    """The catalogue entry of one registered dataset."""
    cls = DATASETS.get(name)
    summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
    official = getattr(cls, "official_factors", None)
    if official is not None:
        space = official()
        domains = getattr(cls, "possible_domains", ("sim",))
        channels = getattr(cls, "channels", None)
        return DatasetInfo(name, summary, _pairs(space.names, space.sizes), domains, channels, True)
    ds: GroundTruthDataset = cls()
    pairs = _pairs(ds.factors.names, ds.factors.sizes)
    return DatasetInfo(name, summary, pairs, tuple(ds.domains), ds.channels, False)


def catalog() -> list[DatasetInfo]:
    """Every registered dataset, by name."""
    return [describe(name) for name in DATASETS.names()]


def format_catalog(entries: list[DatasetInfo]) -> str:
    """A plain-text table: one block per dataset with its factors and domains."""
    lines = []
    for e in entries:
        source = "file (option path=...)" if e.needs_file else "procedural"
        domains = ", ".join(e.domains)
        lines.append(f"{e.name}  [{source}; domains: {domains}; {e.total:,} combinations]")
        if e.summary:
            lines.append(f"    {e.summary}")
        lines.append("    " + ", ".join(f"{n} {s}" for n, s in e.factors))
    return "\n".join(lines)


def _pairs(names: list[str], sizes: list[int]) -> tuple[tuple[str, int], ...]:
    return tuple(zip(names, sizes, strict=True))
