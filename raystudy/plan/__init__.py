"""`raystudy plan`: a study's size, placement and calibrated cost, before running it.

`make_plan` (estimate.py) returns a `Plan` (result.py): it costs the kinds of trial the study's
own finished runs measured from their timings (measured.py) and the others by a costing
(costing.py) that groups the trials by what drives their cost (groups.py), times each group at
small sizes (calibrate.py) or reads it from the cache (cache.py), and extrapolates to the
trials' sizes (extrapolate.py); `format_plan` (report.py) says what was measured, where, and
how it was scaled. `plan_study`
(study_plan.py) is the command itself: a spec file in, the text it prints out.
"""

from raystudy.plan.estimate import make_plan
from raystudy.plan.extrapolate import Line, TrialCost, scaled_evaluation, trial_cost
from raystudy.plan.report import format_plan
from raystudy.plan.result import Plan

__all__ = [
    "Line",
    "Plan",
    "TrialCost",
    "format_plan",
    "make_plan",
    "scaled_evaluation",
    "trial_cost",
]
