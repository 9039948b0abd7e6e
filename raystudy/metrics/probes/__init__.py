"""Downstream probes for the transfer metric; importing this registers the built-in ones."""

from raystudy.metrics.probes import gbt, linear, mlp
from raystudy.metrics.probes._registry import PROBES, Probe, get_probe, register_probe

__all__ = ["PROBES", "Probe", "gbt", "get_probe", "linear", "mlp", "register_probe"]
