"""A trial's wall-time limit (`execution.trial_time_limit_s`): a runaway trial fails with the
timeout on its run; one stuck inside C, where Python cannot raise, has its runs failed by the
watchdog and its process ended. Real training, a real MLflow store, a real blocked read."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from raystudy.spec import TrialConfig
from raystudy.tags import ERROR_TAG, TIMED_OUT_TAG
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial
from raystudy.trials.time_limit import TrialTimedOut, time_limit

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# heavy (the fault tier): ~30 s of a trial training until its limit; the watchdog alone is
# tested below, and the same limit through Tune in tests/reliability/test_faults_trials.py.
@pytest.mark.heavy
def test_a_trial_past_its_limit_fails_with_the_timeout_on_its_run(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("limit")
    config = TrialConfig.model_validate(
        {
            "dataset": {"name": "dsprites"},
            "model": {"objective": "beta_vae", "architecture": "mlp", "latent_dim": 4},
            # far more steps than the limit allows on any machine
            "train": {"steps": 10_000_000, "batch_size": 8, "report_every": 5},
            "evaluation": {"metrics": ["mig"], "probes": []},
        }
    )
    ctx = TrialContext(uri, experiment, None, "limit", "t1", "runaway", time_limit_s=10.0)
    started = time.monotonic()
    with pytest.raises(TrialTimedOut, match=r"trial_time_limit_s \(10 s\)"):
        run_trial(config, ctx, LocalReporter())
    assert time.monotonic() - started < 60
    [run] = client.search_runs([experiment])
    assert run.info.status == "FAILED"
    assert run.data.tags[TIMED_OUT_TAG] == "10"
    assert run.data.tags[ERROR_TAG].startswith("TrialTimedOut: the trial ran past")
    assert run.data.metrics["train/loss"] > 0  # it trained until the limit


def test_a_timeout_that_a_library_wrapped_is_still_the_timeout() -> None:
    # As MLflow's store does when the timeout lands inside its database session.
    with pytest.raises(TrialTimedOut, match=r"\(0.3 s\)") as caught, time_limit(0.3, print):
        try:
            while True:
                sum(range(100))
        except Exception as exc:
            raise RuntimeError("the store wrapped it") from exc
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_no_limit_and_a_block_that_ends_in_time_raise_nothing() -> None:
    with time_limit(None, lambda e: pytest.fail("no limit")):
        time.sleep(0.05)
    with time_limit(5.0, lambda e: pytest.fail("ended in time")):
        time.sleep(0.05)
    time.sleep(0.1)  # the watchdog is gone: nothing is raised later either


STUCK = """
import os, sys
from pathlib import Path
from raystudy.trials.time_limit import time_limit
read_end, write_end = os.pipe()  # nobody writes: the read blocks inside C for ever
note = Path(sys.argv[1])
with time_limit(1.0, lambda error: note.write_text(str(error)), grace_s=1.0):
    os.read(read_end, 1)
print("the read returned", flush=True)
"""


def test_a_trial_stuck_outside_python_is_failed_and_its_process_ended(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", STUCK, str(note)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "the read returned" not in done.stdout
    assert time.monotonic() - started < 30
    assert "trial_time_limit_s (1 s)" in note.read_text()
    assert "did not stop within 1 s (stuck outside Python)" in done.stderr
