"""A server safe to share (issue 14): a bad manifest is one line shown in place, an upload that cannot be
read (an encrypted zip) or an unforeseen error is a short message without paths or a traceback (logged on
the server), uploads leave no memory behind, manifest paths stay inside the workspace root, and the
report exits 3 quickly when its browser cannot start."""

from __future__ import annotations

import gc
import io
import json
import logging
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from streamlit.runtime.caching.storage.dummy_cache_storage import MemoryCacheStorageManager
from streamlit.testing.v1 import AppTest

from analysis.demo.testing import big_jsonl_run
from analysis.errors import InputError
from analysis.workspace import read_manifest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180

TURNS = [
    {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {"area": "west"}}},
    {"dialogue_id": "d1", "turn_index": 1, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {"area": "east"}}},
]


def write_run(folder: Path, name: str = "run.jsonl") -> Path:
    path = folder / name
    path.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n", encoding="utf-8")
    return path


def write_manifest(folder: Path, extra: str = "", run: str = "", head: str = "") -> Path:
    write_run(folder)
    path = folder / "workspace.toml"
    name = "" if head.startswith("name") else 'name = "t"'
    path.write_text(
        f'[workspace]\n{name}\n{head}\n[[runs]]\nname = "a"\npred = "run.jsonl"\n{run}\n{extra}\n',
        encoding="utf-8",
    )
    return path


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def plain(body: str) -> str:
    """A message as the user reads it: Markdown's backslash escapes (`ui.md`) removed."""
    return re.sub(r"\\(.)", r"\1", body)


# --- 1. the manifest: every key and value type checked, one line naming the manifest and the key ---------

BAD_MANIFESTS = {
    "mapping slots not a table": ('[[mappings]]\na = "a"\nb = "a"\nslots = "hotel-area"', "", "", "slots"),
    "mapping slot value not a string": ('[[mappings]]\na = "a"\nb = "a"\nslots = { "x" = 1 }', "", "", "slots"),
    "mapping run not a string": ('[[mappings]]\na = 1\nb = "a"\nslots = {}', "", "", "needs a"),
    "mapping unknown key": ('[[mappings]]\na = "a"\nb = "a"\nslot = {}', "", "", "unknown keys ['slot']"),
    "extra_tags a string": ('[review]\nextra_tags = "asr error"', "", "", "extra_tags"),
    "extra_tags not strings": ("[review]\nextra_tags = [1, 2]", "", "", "extra_tags"),
    "extra_tags with ;": ('[review]\nextra_tags = ["a;b"]', "", "", "extra_tags"),
    "review not a table": ("[[review]]\nextra_tags = []", "", "", "[review] must be a table"),
    "review unknown key": ('[review]\nextra_tag = ["x"]', "", "", "unknown keys ['extra_tag']"),
    "database_url not a string": ("[review]\ndatabase_url = 5", "", "", "database_url"),
    "max_upload_mb not a number": ('[dashboard]\nmax_upload_mb = "big"', "", "", "max_upload_mb"),
    "unknown section": ("[dashbord]\nmax_upload_mb = 5", "", "", "unknown sections ['dashbord']"),
    "workspace name not a string": ("", "", "name = 3", "[workspace] name"),
    "allow_outside_root not a bool": ("", "", 'allow_outside_root = "yes"', "allow_outside_root"),
    "workspace unknown key": ("", "", "root = '.'", "unknown keys ['root']"),
    "run seed a bool": ("", "seed = true", "", "seed"),
    "run dataset a number": ("", "dataset = 2.1", "", "dataset"),
    "run gold a number": ("", "gold = 3", "", "gold"),
    "run format a list": ("", 'format = ["jsonl"]', "", "format"),
    "run unknown key": ("", 'langauge = "en"', "", "unknown keys ['langauge']"),
    "fewjoint shots a string": (
        '[[fewjoint]]\nname = "f"\ngold = "g.json"\npred = ["p.jsonl"]\nshots = "5"',
        "",
        "",
        "shots",
    ),
    "fewjoint unknown key": ('[[fewjoint]]\nname = "f"\ngold = "g.json"\npred = ["p.jsonl"]\nseed = 1', "", "", "seed"),
}


@pytest.mark.parametrize("case", list(BAD_MANIFESTS))
def test_a_bad_manifest_value_is_one_line_naming_the_manifest_and_the_key(tmp_path: Path, case: str) -> None:
    extra, run, head, key = BAD_MANIFESTS[case]
    manifest = write_manifest(tmp_path, extra, run, head)
    with pytest.raises(InputError) as caught:
        read_manifest(manifest)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{manifest} [format: workspace]: ")
    assert key in message


def test_a_good_manifest_with_every_section_reads(tmp_path: Path) -> None:
    extra = (
        '[[mappings]]\na = "a"\nb = "a"\nslots = { "hotel-area" = "hotel-area" }\n'
        '[review]\nextra_tags = ["asr error"]\ndatabase_url = "sqlite:///x.sqlite"\n[dashboard]\nmax_upload_mb = 50\n'
    )
    workspace = read_manifest(write_manifest(tmp_path, extra, 'seed = 3\ndataset = "MultiWOZ 2.1"'))
    assert workspace.entries[0].meta.seed == 3 and workspace.settings["dashboard"]["max_upload_mb"] == 50
    assert not workspace.allow_outside_root


@pytest.mark.parametrize("case", ["mapping slots not a table", "extra_tags a string"])
def test_the_dashboard_shows_a_bad_manifest_in_place(tmp_path: Path, case: str) -> None:
    """The sidebar shows the one line; every page still opens (no traceback at the bottom of each)."""
    extra, run, head, key = BAD_MANIFESTS[case]
    manifest = write_manifest(tmp_path, extra, run, head)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    at.run()
    no_exception(at)
    errors = [plain(e.body) for e in at.sidebar.error]
    assert any(key in body and str(manifest) in body for body in errors), errors
    assert at.sidebar.text_input(key="w_workspace_path").value == str(manifest)  # another can be opened
    for page in ("crosslingual", "review", "fewjoint", "overview"):
        at.switch_page(f"pages/{page}.py").run()
        no_exception(at)
        assert key in at.session_state["workspace_error"]  # drawn by the sidebar on every run
        assert not [e.body for e in at.main.error if "failed:" in e.body], page


# --- 2. uploads: an unreadable one is a short message; none stays in memory ---------------------------


def encrypted_zip(member: str = "run.jsonl") -> bytes:
    """A zip whose member is flagged encrypted (what a password-protected archive looks like to zipfile)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, "\n".join(json.dumps(t) for t in TURNS))
    data = bytearray(buffer.getvalue())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # general purpose flag, bit 0
        at = data.find(signature)
        data[at + offset] |= 1
    return bytes(data)


class FakeUpload:
    """What `st.file_uploader` hands the upload form: a name, a size and the bytes."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data, self.size = name, data, len(data)

    def getvalue(self) -> bytes:
        return self._data


def leaks(message: str) -> list[str]:
    return [s for s in ("Traceback", str(ROOT), "site-packages", "/tmp", "SELECT") if s in message]


def test_an_encrypted_zip_upload_is_a_short_message(tmp_path: Path) -> None:
    from ui import data

    result = data.upload_source("enc", "run.jsonl.zip", encrypted_zip(), None, None, None)
    assert isinstance(result, str)
    assert "\n" not in result and len(result) < 300 and not leaks(result), result
    assert "run.jsonl.zip" in result or "encrypted" in result


def upload_script() -> None:
    """The sidebar's "Add run" as the browser triggers it: the files in the uploaders' state, then the callback."""
    import streamlit as st

    from ui import sidebar

    for key in ("pred", "gold"):
        value = st.session_state.get(f"fake_{key}")
        if value is not None:
            st.session_state[f"w_upload_{key}_{st.session_state.get('upload_round', 0)}"] = value
    sidebar._add_upload()
    kind, message, _ = st.session_state["upload_result"]
    (st.error if kind == "error" else st.success)(message)


def test_the_upload_form_shows_an_encrypted_zip_in_place() -> None:
    at = AppTest.from_function(upload_script, default_timeout=TIMEOUT)
    at.session_state["fake_pred"] = FakeUpload("secret.jsonl.zip", encrypted_zip())
    at.run()
    no_exception(at)
    assert len(at.error) == 1 and not leaks(plain(at.error[0].body)), at.error[0].body
    assert at.session_state["upload_round"] == 1  # the uploaders are renewed: Streamlit drops the refused bytes


def test_an_unforeseen_error_in_a_page_is_a_short_message_and_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    import ui

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"boom in {ROOT}/secret.sqlite: SELECT * FROM annotations")

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("dst.dashboard").addHandler(handler)
    monkeypatch.setattr(ui, "compute", broken)
    try:
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
        at.session_state["workspace_path"] = str(DEMO)
        at.run()
    finally:
        logging.getLogger("dst.dashboard").removeHandler(handler)
    no_exception(at)
    bodies = [plain(e.body) for e in at.error]
    assert any(b.startswith("this page failed: an unexpected error (RuntimeError)") for b in bodies), bodies
    shown = " ".join(bodies + [m.value for m in at.markdown] + [c.value for c in at.caption])
    assert "boom" not in shown and not leaks(shown)
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in records)  # the details: the server's log
    assert at.sidebar.text_input(key="w_workspace_path").value == str(DEMO)  # the sidebar still works


def test_streamlit_shows_no_error_details() -> None:
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["showErrorDetails"] == "none"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def memory_script() -> None:
    """One session: an upload added, scored and viewed (the Overview's leaderboard), or refused."""
    import streamlit as st

    import ui
    from analysis import views
    from ui import sidebar

    st.session_state["w_upload_pred_0"] = st.session_state["fake_pred"]
    sidebar._add_upload()
    kind, message, _ = st.session_state["upload_result"]
    if kind == "success":
        st.dataframe(ui.compute(views.leaderboard, ui.runs()))
    else:
        st.error(message)


UPLOADS = 8


def measure_uploads(uploads: int = UPLOADS) -> dict[str, float]:
    """`uploads` sessions, each uploading a distinct 8 MB run (every fourth one refused: an encrypted zip),
    parsing, scoring and viewing it; the process's RSS (MB) before, at its peak and once the sessions are gone."""
    from ui import data

    def one_session(i: int) -> None:
        at = AppTest.from_function(memory_script, default_timeout=TIMEOUT)
        refused = i % 4 == 3
        at.session_state["fake_pred"] = (
            FakeUpload(f"run{i}.zip", encrypted_zip()) if refused else FakeUpload(f"run{i}.jsonl", big_jsonl_run(i))
        )
        at.run()
        no_exception(at)
        assert (len(at.error) == 1) if refused else (len(at.dataframe) == 1), [e.body for e in at.error]

    one_session(100)  # warm: imports, Streamlit's caches of code, the allocator's first arenas
    before = settled_rss_mb()
    peak = before
    for i in range(uploads):
        one_session(i)
        peak = max(peak, rss_mb())
    after = settled_rss_mb()
    live = sum(isinstance(o, data.Upload) for o in gc.get_objects())
    return {"before": before, "peak": peak, "after": after, "live_uploads": live}


def settled_rss_mb(rounds: int = 10) -> float:
    """The RSS (MB) once what the server does between sessions has been done and the memory has stopped
    falling: the store's writer flushed, the scoring children's hand-over awaited, ended sessions' uploads
    released, a full collection, the heap trimmed (`SWEEP_SECONDS` apart on a server; here up to `rounds`
    half-seconds). A leak stays whatever the wait; what a busy machine's threads still hold at a first
    reading goes. CI once read 262 MB before and 389 MB after eight uploads from a single reading each; the
    same commit read +1 to +30 MB in ten runs here, quiet and at load 8, and no upload outlived its session
    is now checked directly."""
    from analysis.store import entries
    from ui import data

    lowest = float("inf")
    for _ in range(rounds):
        entries.flush()  # with its flushers: the scoring children still saving (`analysis.isolated.settle`)
        data.release_ended_sessions()
        gc.collect()
        data.trim_memory()
        reading = rss_mb()
        if reading > lowest - 2:  # no longer falling
            return min(lowest, reading)
        lowest = reading
        time.sleep(0.5)
    return lowest


@pytest.mark.slow
def test_uploads_leave_the_memory_where_it_was() -> None:
    """Measured in a process of its own, with the memory settings `make run`'s server starts with
    (scripts/serve.py: Arrow's buffers from glibc's heap, 2 malloc arenas): the other tests' sessions
    would move its RSS, and with Arrow's default pool (mimalloc) what a finished script thread freed stays
    in that thread's segments, a few hundred MB or nothing depending on how the threads were scheduled
    (once +413 MB in a full run, +47 MB alone).

    Eight uploads (six accepted), not twenty: what it must catch still fails it by more than twice the
    margin. Measured with eight (load average 20 on 2 cores): as committed +6 MB; the heap not trimmed
    (`trim_memory` a no-op) +234 MB; each upload's parsed run kept after its session +273 MB (a kept
    `Upload`, with its scored tables, is about 180 MB each). A leak of under 17 MB an upload (less than
    its parsed run) would pass eight uploads where twenty could catch it; the 100 MB bound is issue 14's."""
    server_memory = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}  # serve.py: ARENA_MAX
    done = subprocess.run(
        [sys.executable, __file__, "measure"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **server_memory},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rss = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"RSS before {rss['before']:.0f} MB, peak {rss['peak']:.0f} MB, after {UPLOADS} uploads {rss['after']:.0f} MB"
    )
    assert rss["live_uploads"] == 0  # no session's upload outlived it
    assert rss["peak"] - rss["before"] > 50  # the uploads really took memory while they were held
    assert rss["after"] - rss["before"] < 100


def _end_sessions(monkeypatch: pytest.MonkeyPatch, ended: Any) -> None:
    """A running server whose session manager knows every session but those `ended(session_id)` says ended."""
    from streamlit import runtime

    class Manager:
        def get_session_info(self, session_id: str) -> object | None:
            return None if ended(session_id) else object()

    class FakeRuntime:
        _session_mgr = Manager()
        cache_storage_manager = MemoryCacheStorageManager()  # what st.cache_data.clear() asks a runtime for

        @staticmethod
        def exists() -> bool:
            return True

        @staticmethod
        def instance() -> FakeRuntime:
            return FakeRuntime()

    monkeypatch.setattr(runtime, "Runtime", FakeRuntime)


def test_an_ended_sessions_uploads_are_released(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a running server, a session that ended (closed, or disconnected past Streamlit's reconnection
    window) gives its uploads back even while something still holds its `RunSource`."""

    from ui import data

    source = data.upload_source("u", "run.jsonl", "\n".join(json.dumps(t) for t in TURNS).encode(), None, None, None)
    assert not isinstance(source, str) and source.upload is not None
    data._LIVE.setdefault("ended-session", []).append(data.weakref.ref(source.upload))

    _end_sessions(monkeypatch, lambda session_id: True)  # no session is known: every one has ended
    data.release_ended_sessions()  # or a sweep thread of an earlier AppTest: the release is what is checked
    assert source.upload.run is None and isinstance(data.load(source), str)


# --- 4. manifest paths stay inside the workspace root --------------------------------------------------


@pytest.mark.parametrize(
    "run",
    [
        'gold = "../outside.jsonl"',
        'gold = "/etc/passwd"',
        'gold = "link.jsonl"',  # a symlink that leads out
    ],
)
def test_manifest_paths_outside_the_root_are_refused(tmp_path: Path, run: str) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    write_run(tmp_path, "outside.jsonl")
    (folder / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    with pytest.raises(
        InputError,
        match=r"leads outside the workspace root .*; move the file inside it, or set allow_outside_root = true",
    ):
        read_manifest(write_manifest(folder, run=run))


def test_fewjoint_paths_outside_the_root_are_refused(tmp_path: Path) -> None:
    extra = '[[fewjoint]]\nname = "f"\ngold = "../g.json"\npred = ["p.jsonl"]'
    with pytest.raises(InputError, match=r"\[\[fewjoint\]\] #1: gold = '../g.json' leads outside"):
        read_manifest(write_manifest(tmp_path, extra))


def test_allow_outside_root_lets_them_load_and_the_sidebar_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    write_run(tmp_path, "outside.jsonl")
    manifest = write_manifest(folder, run='gold = "../outside.jsonl"', head="allow_outside_root = true")
    workspace = read_manifest(manifest)
    assert workspace.allow_outside_root and workspace.entries[0].gold == folder / "../outside.jsonl"
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    at.run()
    no_exception(at)
    assert not at.error
    assert any("allow_outside_root = true" in plain(c.value) for c in at.sidebar.caption)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)  # the demo does not set it: no caption
    at.session_state["workspace_path"] = str(DEMO)
    at.run()
    assert not any("allow_outside_root" in plain(c.value) for c in at.sidebar.caption)


def test_the_demo_workspace_stays_inside_its_root() -> None:
    workspace = read_manifest(DEMO)
    assert not workspace.allow_outside_root and workspace.entries and workspace.fewjoint_entries


# --- 3. the report: exit 3 within 30 s when its browser cannot start -----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("behaviour", ["exit 1", "exec sleep 600"])
def test_report_exits_3_quickly_when_the_browser_cannot_start(tmp_path: Path, behaviour: str) -> None:
    """A browser that exits is met at once; one that hangs, at twice `DST_BROWSER_START_SECONDS` (a hung start
    gets one fresh browser): 14 by default, 28 s under the requirement's 30 s (the first assertion); 3 here, so
    the test does not sit out the default."""
    from analysis import settings

    assert settings.setting("DST_BROWSER_START_SECONDS").default * 2 < 30
    browser = tmp_path / "chromium"
    browser.write_text(f"#!/bin/sh\n{behaviour}\n", encoding="utf-8")
    browser.chmod(0o755)
    folder = tmp_path / "ws"
    folder.mkdir()
    manifest = write_manifest(folder)
    env = {**os.environ, "BROWSER_PATH": str(browser), "DST_BROWSER_START_SECONDS": "3"}
    command = [sys.executable, "-m", "analysis", "report", str(manifest), "--out", str(tmp_path / "out")]
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--no-progress", "--resamples", "10"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    seconds = time.monotonic() - started
    print(f"report with a browser that does `{behaviour}`: exit {done.returncode} after {seconds:.1f} s")
    assert done.returncode == 3, done.stderr
    assert seconds < 30
    if behaviour.startswith("exec sleep"):
        assert "within 3 s" in done.stderr, done.stderr  # the setting was read
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("report: the browser for figure export"), done.stderr
    assert str(browser) in lines[0]
    assert "Traceback" not in done.stderr


if __name__ == "__main__" and sys.argv[1:] == ["measure"]:
    print(json.dumps(measure_uploads()))


# --- the figure cache: an upload's figures are its session's, and go when it ends ---------------------

BUILT_FIGURES: list[int] = []


def counted_figure(frame: Any) -> Any:
    """A figure builder that records each real build (`ui.place.figure` caches it by name)."""
    import plotly.graph_objects as go

    BUILT_FIGURES.append(len(frame))
    return go.Figure(go.Bar(x=list(range(len(frame))), y=[1] * len(frame)))


def test_an_uploads_figures_are_private_to_its_session_and_go_when_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:

    from analysis import views
    from ui import data, place

    session = {"id": "session-a"}
    monkeypatch.setattr(data, "_session_id", lambda: session["id"])
    source = data.upload_source("u", "run.jsonl", "\n".join(json.dumps(t) for t in TURNS).encode(), None, None, None)
    assert not isinstance(source, str) and source.upload is not None
    table = data.compute(views.slot_table, [(source, data.DECLARED)], {}, data.DECLARED)
    assert data.owner_of([table]) == "session-a" and data.private_owner() == "session-a"
    same_content = table.copy()  # the same numbers, not from the upload: what another session could hold
    assert data.owner_of([same_content]) == ""

    BUILT_FIGURES.clear()
    place.figure(counted_figure, table)
    session["id"] = "session-b"  # another session, holding no upload
    assert data.private_owner() == ""
    place.figure(counted_figure, same_content)  # not served session A's figure: built anew
    place.figure(counted_figure, table)  # the upload's own frame (a prefetch thread has no session): A's entry
    assert len(BUILT_FIGURES) == 2

    _end_sessions(monkeypatch, lambda session_id: session_id == "session-a")
    # Session A ended: its upload is released and the figure cache dropped, by this call or by a sweep thread
    # of an earlier AppTest that got there first (so the count this call returns is not asserted).
    data.release_ended_sessions()
    assert source.upload.run is None
    place.figure(counted_figure, same_content)
    assert len(BUILT_FIGURES) == 3


# --- an error inside a fragment: the project's one line in place, not Streamlit's exception box ---------


def fragment_script() -> None:
    import streamlit as st

    from analysis.errors import InputError
    from ui import errors

    @st.fragment
    @errors.in_place("showing this turn")
    def broken(kind: str) -> None:
        st.text("before the error")
        if kind == "input":
            raise InputError("run.json", "trade", "turn 3 is missing", dialogue_id="MUL0001.json")
        raise KeyError("/srv/secret/path")

    broken("input")
    broken("unforeseen")
    st.text("the page goes on")


def test_an_error_inside_a_fragment_is_one_line_in_place() -> None:
    at = AppTest.from_function(fragment_script, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception  # no Streamlit exception box, no traceback
    assert [e.value for e in at.error] == [
        "run.json [format: trade]: turn 3 is missing (first offending record: dialogue 'MUL0001.json')",
        "showing this turn failed: an unexpected error (KeyError); the details are in the server's log",
    ]
    assert [t.value for t in at.text] == ["before the error", "before the error", "the page goes on"]
