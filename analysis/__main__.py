"""`python -m analysis`: the command line (see analysis.cli.main)."""

import sys

from analysis.cli.main import main

sys.exit(main())
