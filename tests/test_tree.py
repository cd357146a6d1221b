"""The tracked tree names no folder of one machine: defaults (benchmark folders, caches) live in the
repository (git-ignored) or in the temporary folder, and build output is ignored."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT

# A home or work folder of one machine, or a fixed temporary folder (tempfile knows the machine's own).
MACHINE_PATH = re.compile(r"""(?<![\w.~-])/(?:work|home|root|Users|tmp|var/tmp|mnt)/""")
# Paths documented on purpose: Debian's chromium and fonts, a team server's example cache folder.
DOCUMENTED = ("/usr/bin/chromium", "/usr/share/fonts", "/shared/dst-cache")


def _tracked_text() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    texts = {}
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if (
            not name
            or not path.is_file()
            or name.startswith(("data/", "tests/data/"))
            or path == Path(__file__).resolve()
        ):
            continue
        raw = path.read_bytes()
        if b"\0" not in raw[:4096]:  # text, not an image or an archive
            texts[name] = raw.decode("utf-8", errors="replace")
    return texts


def test_no_machine_paths_in_the_tree() -> None:
    found = []
    for name, text in _tracked_text().items():
        for number, line in enumerate(text.splitlines(), start=1):
            if MACHINE_PATH.search(line) and not any(d in line for d in DOCUMENTED):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert found == []


def test_the_checker_sees_a_machine_path() -> None:
    seen = [s for s in ('default=Path("/work/tmp/x")', "in /home/me/", "'/tmp/cache'") if MACHINE_PATH.search(s)]
    assert len(seen) == 3
    assert not MACHINE_PATH.search("~/.cache/dst-analysis and https://example.org/home/ and sqlite:///x")


def test_build_output_is_ignored() -> None:
    checked = subprocess.run(["git", "check-ignore", "-q", "build/lib/x.py"], cwd=ROOT, check=False)
    assert checked.returncode == 0
