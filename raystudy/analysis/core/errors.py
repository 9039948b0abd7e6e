"""The one error type of the analysis: what a user asked for cannot be analysed, and why."""


class AnalysisError(ValueError):
    """A study with no trial runs, an unknown `--by` axis, ...; the message says what to do."""
