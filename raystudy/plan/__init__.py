"""`raystudy plan`: a study's size, placement and calibrated cost, before running it.

`make_plan` (estimate.py) groups the trials by what drives their cost (groups.py), times each
group at small sizes (calibrate.py), extrapolates to the trials' sizes (extrapolate.py), and
`format_plan` (report.py) says what was measured, where, and how it was scaled. `plan_study`
(study_plan.py) is the command itself: a spec file in, the text it prints out.
"""

from raystudy.plan.estimate import Plan, make_plan
from raystudy.plan.extrapolate import Line, TrialCost, scaled_evaluation, trial_cost
from raystudy.plan.report import format_plan

__all__ = [
    "Line",
    "Plan",
    "TrialCost",
    "format_plan",
    "make_plan",
    "scaled_evaluation",
    "trial_cost",
]
