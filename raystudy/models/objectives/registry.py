"""`name -> Objective class`; each objective module registers itself on import."""

from __future__ import annotations

from raystudy.models.objectives.base import Objective
from raystudy.registry import Registry

OBJECTIVES: Registry[type[Objective]] = Registry("objective")
