"""`python -m analysis`: the command line (see analysis.cli)."""

import sys

from analysis.cli import main

sys.exit(main())
