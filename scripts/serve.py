"""`make run`: the dashboard's server, started once the workspace is read and its first views computed.

`streamlit run app.py -- --workspace PATH` serves the same dashboard; this launcher runs exactly that, in
the same process, after a warm-up: it imports what the pages import, reads every run of the workspace,
computes the Overview (the leaderboard with its intervals, and its chart) and then, for at most
`WARM_BUDGET` seconds, what a session's prefetch computes after its first page (`ui.prefetch.jobs`: the
other pages' first views and figures), all into Streamlit's caches; then it starts the server. The URL
appears when the dashboard can answer at once: the first browser finds its pages computed, as a second
visitor would.

Warming before the server listens, not beside it, is on purpose: Streamlit serves its JavaScript from
this same Python process, so work in a background thread while a browser loads the page slows the page
down (measured: 4.4-5.3 s to the first chart instead of 3.3-3.7 s on a two-core machine).

    python scripts/serve.py [--workspace PATH] [streamlit run options, e.g. --server.port 8502]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `ui` and `analysis`, as app.py imports them
APP = ROOT / "app.py"
DEFAULT_WORKSPACE = ROOT / "data" / "demo" / "workspace.toml"
READY = "dashboard: workspace ready"
NOT_WARMED = "dashboard: workspace not warmed"
# Seconds the launcher spends on the other pages' first views before it starts the server anyway (what
# is left, a session's prefetch computes after its first page). 20 MultiWOZ-size runs need about 3 s.
WARM_BUDGET = 6.0


def warm(workspace: str, budget: float = WARM_BUDGET) -> str:
    """Read the workspace's runs, compute its first page, then the other pages' first views for at most
    `budget` more seconds, into Streamlit's caches; a one-line summary. Before the server exists:
    Streamlit's caches keep what is computed now for the sessions to come."""
    from ui import data, prefetch  # pandas, Plotly and analysis: most of a cold first page

    manifest = data.open_manifest(workspace)
    if isinstance(manifest, str):
        return f"{NOT_WARMED}: {manifest}"
    sources, failed = data.load_workspace(manifest)
    runs = list(sources)
    if not runs:
        return f"{NOT_WARMED}: none of its {len(manifest.entries)} runs loaded"
    prefetch.run_jobs(prefetch.first_page_jobs(runs, sources, data.DECLARED))
    rest = prefetch.jobs(runs, runs[0], sources, data.DECLARED, list(manifest.mappings), {})
    done = prefetch.run_jobs(rest, deadline=time.monotonic() + budget)
    return (
        f"{READY}: {len(runs)} runs"
        + (f" ({len(failed)} failed to load: the dashboard says why)" if failed else "")
        + (
            "; every page's first views computed"
            if done == len(rest)
            else f"; {done} of the other pages' {len(rest)} first views computed, the rest after the first page"
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--workspace", default=str(DEFAULT_WORKSPACE), help="the workspace manifest (TOML)")
    known, streamlit_options = parser.parse_known_args(argv)
    started = time.perf_counter()
    # Streamlit notes each cache used before its runtime exists ("No runtime found"): expected here.
    import streamlit.runtime.caching.cache_data_api  # noqa: F401  (creates the logger, with Streamlit's level)

    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    from ui.data import manifest_path  # keys the workspace as app.py does

    workspace = manifest_path(known.workspace)
    print(f"dashboard: reading {workspace} …", file=sys.stderr, flush=True)
    try:
        summary = warm(workspace)
    except Exception as exc:  # the dashboard shows the error itself; the server starts anyway
        summary = f"{NOT_WARMED}: {type(exc).__name__}: {exc}"
    finally:
        cache_log.setLevel(level)
    print(f"{summary} (in {time.perf_counter() - started:.1f} s); starting the server", file=sys.stderr, flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *streamlit_options, "--", "--workspace", workspace]
    cli.main()


if __name__ == "__main__":
    main()
