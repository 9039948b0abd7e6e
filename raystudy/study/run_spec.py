"""The spec `raystudy run` and `optimize` start a study from: the YAML with its --sets, the
MLflow store named on the command line or in the environment, and a check that the spec
searches the way the command runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from raystudy.checks import load_spec
from raystudy.spec import OptionError, SpecError, StudySpec
from raystudy.study.setup import check_search_method
from raystudy.tracking.retry import shown

#: Where a tracking URI given without a spec field came from, as messages name it.
ENV_STORE, OPTION_STORE = "MLFLOW_TRACKING_URI", "--tracking-uri"


def spec_to_run(
    path: Path,
    overrides: Sequence[str],
    methods: Sequence[str],
    tracking_uri: str | None,
    store_from_env: bool,
    say: Callable[[str], None],
) -> StudySpec:
    """The validated spec at `path` under its `overrides`. `tracking_uri` (from --tracking-uri,
    or from $MLFLOW_TRACKING_URI when `store_from_env`) replaces the spec's tracking.uri, except
    that the environment never overrides a store the spec names; `say` tells where a store
    from the environment came from.

    SpecError for a bad spec, OptionError for a tracking URI the spec refuses (naming where
    it came from), StudyError for a search other than `methods`."""
    spec = load_spec(path, overrides)
    if tracking_uri is not None and not (store_from_env and spec.tracking.uri):
        # Before the --sets, so that a --set tracking.uri still has the last word.
        store = [f"tracking.uri={json.dumps(tracking_uri)}"]  # a YAML string, as given
        try:
            spec = load_spec(path, [*store, *overrides])
        except SpecError as exc:
            source = ENV_STORE if store_from_env else OPTION_STORE
            raise OptionError(f"{source}: {exc}") from exc
        if store_from_env:
            say(f"MLflow store from {ENV_STORE}: {shown(tracking_uri)}")
    check_search_method(spec, path, methods)
    return spec
