"""`python -m raystudy.cli`: the `raystudy` command, from a checkout without the script."""

from raystudy.cli import app

if __name__ == "__main__":
    app()
