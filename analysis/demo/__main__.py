"""`python -m analysis.demo REALDATA OUT`: build the demo workspace (see analysis.demo.build)."""

from analysis.demo.build import main

raise SystemExit(main())
