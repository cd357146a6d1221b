"""`python -m analysis`: the command line (see analysis.cli.entry)."""

from analysis.cli.entry import run

run()
