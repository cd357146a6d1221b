"""`python -m analysis`: the command line (see analysis.cli.main)."""

import gc
import sys

# Off while ~700 modules are imported: everything they build lives to the end of the process, so
# collections during the imports find nothing (main freezes it all and resumes collection afterwards).
gc.disable()

from analysis.cli.main import main  # noqa: E402

sys.exit(main())
