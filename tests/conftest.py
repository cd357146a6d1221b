"""Shared fixtures: where the real evaluation files live, and skipping cleanly when they do not."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from analysis import settings as environment

ROOT = Path(__file__).resolve().parents[1]

# Tests parse for real at least once per session and never touch the user's parse cache.
os.environ.setdefault("DST_CACHE_DIR", tempfile.mkdtemp(prefix="dst-test-cache-"))
# ... and never write an annotation database into the demo workspace (the store's default location).
os.environ.setdefault(
    "DST_ANNOTATIONS_URL", f"sqlite:///{tempfile.mkdtemp(prefix='dst-test-annotations-')}/annotations.sqlite"
)
REALDATA = Path(environment.raw("DST_REALDATA") or ROOT.parent / "shared" / "realdata").resolve()


def realdata_path(*parts: str) -> Path:
    """Path of a file under ../shared/realdata, or skip the test saying what is missing and why."""
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data file {path} is absent (tests on real files need ../shared/realdata)")
    return path


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"{REALDATA} is absent: tests on real files need ../shared/realdata beside the project")
    return REALDATA
