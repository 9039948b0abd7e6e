"""An index on the trial-id tag, so that each trial finds its run without reading every run.

Every trial, as it starts, looks for a run of its Ray trial id (a retried or resumed trial goes
on in its own run: `TrialRun.open`). MLflow's tables index tags by (key, run), not by value,
so that search reads every run's trial-id tag: 4 ms in an empty sqlite store, 12 ms at 3,000
runs, 29 ms at 9,000 (this 2-core machine, 2026-11-28), which made a study's trials cost
quadratic in its size. A partial index on the tag's value (only the trial-id rows) makes it
8 ms at 9,000. raystudy adds it to database stores it writes to directly (sqlite,
PostgreSQL): the index is raystudy's own (MLflow's queries need no change to use it), and the
statement is idempotent. A tracking server's database is the server's: `TRIAL_ID_INDEX_SQL`
is what its owner can run.
"""

from __future__ import annotations

from raystudy.spec.url_secrets import expand
from raystudy.tags import TRIAL_ID_TAG

TRIAL_ID_INDEX = "raystudy_tags_trial_id"
#: Also for a tracking server's own database (`psql mlflow -c "..."` on cluster.yaml's head).
TRIAL_ID_INDEX_SQL = (
    f"CREATE INDEX IF NOT EXISTS {TRIAL_ID_INDEX} ON tags (value) WHERE key = '{TRIAL_ID_TAG}'"
)


def ensure_trial_id_index(uri: str) -> bool:
    """Create the index in the sqlite or PostgreSQL store at `uri` if it lacks it; whether it
    has it now. Other stores (a server, MySQL, which has no partial indexes) are left alone.
    Best effort: a role that may not create indexes leaves the store as MLflow made it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    scheme = uri.partition("://")[0].split("+")[0].lower()
    if scheme not in ("sqlite", "postgresql"):
        return False
    statement = TRIAL_ID_INDEX_SQL
    options = {}
    if scheme == "postgresql":
        # CONCURRENTLY: other studies' trials may be writing to `tags` while it is built;
        # it cannot run inside a transaction.
        statement = statement.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY", 1)
        options["isolation_level"] = "AUTOCOMMIT"
    engine = create_engine(make_url(expand(uri)), poolclass=NullPool, **options)
    try:
        with engine.begin() as con:
            con.execute(text(statement))
        return True
    except SQLAlchemyError:
        return False
    finally:
        engine.dispose()
