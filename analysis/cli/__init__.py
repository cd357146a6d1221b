"""The command line, `python -m analysis` (or `dst-analysis`): one module per sub-command group. The program's
entry is `analysis.cli.entry.run`."""

# The commands `analysis.cli.main.main` runs in its own process and ends at once: short-lived,
# no child process, no browser.
ONE_SHOT = ("metrics", "formats", "conventions", "sniff")
