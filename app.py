"""The dashboard's frame: `st.navigation` over `pages/`, the shared sidebar, deep links.

Run with `make run WORKSPACE=path` or `streamlit run app.py -- --workspace path`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import streamlit as st

from ui import links, sidebar

ROOT = Path(__file__).resolve().parent
DEFAULT_WORKSPACE = ROOT / "data" / "demo" / "workspace.toml"

# (file, title, url_path, icon). Adding a page is one line here.
PAGES = [
    ("pages/overview.py", "Overview", "overview", ":material/leaderboard:"),
    ("pages/slots.py", "Slots", "slots", ":material/view_list:"),
    ("pages/domains.py", "Domains", "domains", ":material/category:"),
    ("pages/turn_depth.py", "Turn depth", "turn_depth", ":material/stacked_line_chart:"),
    ("pages/crosslingual.py", "Cross-lingual", "crosslingual", ":material/translate:"),
    ("pages/dialogue.py", "Dialogue viewer", "dialogue", ":material/forum:"),
    ("pages/fewjoint.py", "FewJoint", "fewjoint", ":material/join_inner:"),
    ("pages/review.py", "Review", "review", ":material/rate_review:"),
    ("pages/reconcile.py", "Reconcile", "reconcile", ":material/compare_arrows:"),
]


def workspace_argument(argv: list[str]) -> str:
    """`--workspace PATH` from the arguments after `--` (default: the demo workspace)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--workspace", default=str(DEFAULT_WORKSPACE))
    known, _ = parser.parse_known_args(argv)
    path = Path(known.workspace)
    return str(path if path.is_absolute() else (Path.cwd() / path).resolve())


st.set_page_config(page_title="DST error analysis", page_icon=":material/troubleshoot:", layout="wide")
pages = [st.Page(ROOT / file, title=title, url_path=url, icon=icon) for file, title, url, icon in PAGES]
current = st.navigation(pages)
page_name = current.url_path or PAGES[0][2]
sidebar.load(workspace_argument(sys.argv[1:]))
links.apply({url: file for file, _, url, _ in PAGES}, page_name)
sidebar.render()
current.run()
links.write(page_name)
