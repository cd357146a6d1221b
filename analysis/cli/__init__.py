"""The command line, `python -m analysis` (or `dst-analysis`): one module per sub-command group."""
