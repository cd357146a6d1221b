"""One user's file never stalls the others (issue 40, requirement 1): while one session loads a workspace
whose run takes seconds of CPU to parse, the health check and a second session's page still answer within
1 s (every probe while the parse runs), and a second browser session opens.

The hostile run is a declared mapping whose `id_pattern` (the user's own regular expression) backtracks
exponentially on the file's id: about 15 s of CPU inside one `re.match`, which holds the interpreter
throughout. Parsed in the server's process (as workspace runs were), it froze every other request (the issue
measured 50.3 s for the health check); parsed in the worker process (`analysis.isolated`), the server's
thread only waits. The test polls the server while the worker is alive, found as a child of the server's warm
parent (`analysis.forking`).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import loaded, rerun, start_server, stop_server
from playwright.sync_api import Browser, expect

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PATTERN = r"^(?P<dialogue>(a+)+b)-(?P<turn>\d+)$"  # 2^26 ways to split the id's a's before failing


def _workspace(folder: Path) -> Path:
    good = {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {}}}
    (folder / "good.jsonl").write_text(json.dumps(good) + "\n")
    (folder / "hostile.json").write_text(json.dumps([{"flag": "a" * 26 + "-1", "predict": {}, "truth": {}}]))
    manifest = folder / "workspace.toml"
    manifest.write_text(
        '[[runs]]\nname = "good"\npred = "good.jsonl"\n\n'
        '[[runs]]\nname = "hostile"\npred = "hostile.json"\n'
        f'mapping = {{ id = "flag", id_pattern = {json.dumps(PATTERN)}, pred = "predict", gold = "truth" }}\n'
    )
    return manifest


def _workers(server_pid: int) -> list[int]:
    """The server's worker processes (`analysis.isolated`): its children forked by its warm parent
    (`analysis.forking`, the server's child, which lives as long as the server and is no worker), and any
    fresh `python -m analysis.isolated` child of its own."""
    parents: dict[int, list[tuple[int, bytes]]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append((int(status.parent.name), cmdline))
    found = []
    for pid, cmdline in parents.get(server_pid, []):
        if b"analysis.forking" in cmdline:
            found.extend(child for child, _ in parents.get(pid, []))
        elif b"analysis.isolated" in cmdline:
            found.append(pid)
    return found


def _seconds(url: str) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
        assert response.status == 200
    return time.monotonic() - started


BOUND_S = 1.0  # the requirement: the health check and the page answer within 1 s while a hostile file loads


def _answer(url: str) -> float:
    """Seconds one request to `url` took; a request over `BOUND_S` is made again at once and the better of the
    two counts. A server stalled by a parse keeps every request waiting for seconds on end (10.2-50.3 s before
    the parse left the server), so the second waits too and the probe fails; a machine busier than its cores
    (two busy loops and the other test worker) can hold one answer past 1 s for a scheduling slice, and the
    next one is fast (measured once: a page answer 1.19 s at load 9, the health check 0.03 s around it)."""
    first = _seconds(url)
    return first if first < BOUND_S else min(first, _seconds(url))


def _second_session(browser: Browser, url: str) -> tuple[float, float]:
    """(seconds to the page's document, seconds to Streamlit's app shell) of a new session."""
    page = browser.new_page()
    started = time.monotonic()
    page.goto(url, wait_until="domcontentloaded")
    document = time.monotonic() - started
    page.wait_for_selector('[data-testid="stApp"]', timeout=30_000)
    shell = time.monotonic() - started
    page.close()
    return document, shell


def test_health_and_a_second_session_answer_while_a_hostile_file_loads(browser: Browser, tmp_path: Path) -> None:
    manifest = _workspace(tmp_path)
    # Plain `streamlit run` (no warm-up before listening): the first session is the one that reads the runs.
    process, url = start_server(manifest, launcher=False, env={"DST_CACHE_DIR": str(tmp_path / "cache")})
    try:
        first = browser.new_page()
        first.goto(url)
        deadline = time.monotonic() + 120
        while not _workers(process.pid):
            assert time.monotonic() < deadline, "the first session never started parsing the hostile run"
            time.sleep(0.05)
        during = _second_session(browser, url)
        health, page = [], []
        while _workers(process.pid):  # every probe while the worker parses
            health.append(_answer(f"{url}/_stcore/health"))
            page.append(_answer(url))
            time.sleep(0.2)
        assert len(health) >= 5, "the worker ended before the server could be probed"
        loaded(first)  # the hostile run ends as a one-line error; the good run loads
        assert "does not match id_pattern" in first.inner_text("body")
        after = _second_session(browser, url)  # the same page once nothing is parsing: the browser's own time
        print(
            f"health max {max(health):.2f} s, page max {max(page):.2f} s over {len(health)} probes; second session "
            f"document {during[0]:.2f} s, app shell {during[1]:.2f} s (after the load: {after[1]:.2f} s)"
        )
        # The server answers at once: the health check and a new session's page, every probe.
        assert max(health) < BOUND_S and max(page) < BOUND_S
        # In the browser, a new session's document and app shell are Streamlit's JavaScript loading and starting
        # there, slowed by the worker's own use of one of the machine's cores (measured on two shared cores:
        # 1.45 s and 2.23 s during the parse, 1.20 s after): bounded against the same page once nothing parses.
        assert during[0] < after[0] + 2.0 and during[1] < after[1] + 2.0
        first.close()
    finally:
        stop_server(process)


def _probe_while_working(process_pid: int, browser: Browser, url: str) -> tuple[list[float], list[float], float]:
    """Once the server has a worker: the health check and the page's document (seconds each), a second
    session's app shell (seconds), then the health check and the page polled for as long as a worker runs."""
    deadline = time.monotonic() + 120
    while not _workers(process_pid):
        assert time.monotonic() < deadline, "the first session never started a worker"
        time.sleep(0.05)
    health, page = [_answer(f"{url}/_stcore/health")], [_answer(url)]
    during = _second_session(browser, url)
    while _workers(process_pid):
        health.append(_answer(f"{url}/_stcore/health"))
        page.append(_answer(url))
        time.sleep(0.2)
    return health, page, during[1]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _quiet(pid: int, timeout: float = 180) -> None:
    """Until the process uses under 0.05 s of CPU in a second (or `timeout` is up)."""
    deadline = time.monotonic() + timeout
    before = _cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(1)
        now = _cpu_s(pid)
        if now - before < 0.05:
            return
        before = now


def _assert_answered(what: str, probed: tuple[list[float], list[float], float]) -> None:
    health, page, shell = probed
    print(
        f"{what}: health max {max(health):.2f} s, page max {max(page):.2f} s over {len(health)} probes; "
        f"second session's app shell {shell:.2f} s"
    )
    assert len(health) >= 3, f"the {what} worker ended before the server could be probed"
    assert max(health) < BOUND_S and max(page) < BOUND_S


def test_scoring_a_run_of_huge_states_stalls_no_one(browser: Browser, tmp_path: Path) -> None:
    """Scoring a run the server has not seen, one of huge states (120 turns of 5,000 slots each: seconds of
    CPU to read and score), runs in the worker: the health check and the page answer within 1 s throughout."""
    good = {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {}}}
    (tmp_path / "good.jsonl").write_text(json.dumps(good) + "\n")
    with (tmp_path / "huge.jsonl").open("w") as handle:
        for t in range(120):
            gold = {"hotel": {f"s{i}": f"v{i}" for i in range(5000)}}
            pred = {"hotel": {f"s{i}": f"w{i}" if i % 3 else f"v{i}" for i in range(5000)}}
            handle.write(json.dumps({"dialogue_id": "d1", "turn_index": t, "gold": gold, "pred": pred}) + "\n")
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(
        '[[runs]]\nname = "good"\npred = "good.jsonl"\n\n[[runs]]\nname = "huge"\npred = "huge.jsonl"\n'
    )
    process, url = start_server(manifest, launcher=False, env={"DST_CACHE_DIR": str(tmp_path / "cache")})
    try:
        first = browser.new_page()
        first.goto(url)  # reads and scores both runs: the huge one for seconds in a worker
        _assert_answered("scoring", _probe_while_working(process.pid, browser, url))
        loaded(first)
        assert "failed" not in first.inner_text('[data-testid="stSidebar"]')
        first.close()
    finally:
        stop_server(process)


def test_reading_a_hostile_fewjoint_file_stalls_no_one(browser: Browser, tmp_path: Path) -> None:
    """A FewJoint system's files are read and scored in the worker: a 40 MB prediction file of every query
    predicted 4,000 times (20 MB left the worker a second or two on a quiet machine: too few probes), refused only once all of it is read, leaves the health check and the page
    answering within 1 s, and its fault is one line on the FewJoint page."""
    good = {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {}}}
    (tmp_path / "good.jsonl").write_text(json.dumps(good) + "\n")
    fewjoint = ROOT / "data" / "demo" / "fewjoint"
    (tmp_path / "episodes.json").write_text((fewjoint / "episodes.json").read_text())
    (tmp_path / "hostile_seed1.jsonl").write_text((fewjoint / "simulated_seed1.jsonl").read_text() * 4000)
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(
        '[[runs]]\nname = "good"\npred = "good.jsonl"\n\n'
        '[[fewjoint]]\nname = "hostile"\ngold = "episodes.json"\npred = ["hostile_seed1.jsonl"]\nshots = 1\n'
    )
    process, url = start_server(manifest, launcher=False, env={"DST_CACHE_DIR": str(tmp_path / "cache")})
    try:
        first = browser.new_page()
        first.goto(url)
        loaded(first)
        # The first page's own follow-up (its prefetch of the other pages: their imports and views, in the
        # server's threads) ends first: that is the server's work, not the file's (measured at load 30 on two
        # cores, it held the health check 2-5 s once while it imported the pages' modules).
        _quiet(process.pid)
        first.goto(f"{url}/fewjoint")  # reads and scores the hostile system in a worker
        _assert_answered("FewJoint", _probe_while_working(process.pid, browser, url))
        loaded(first)
        expect(first.get_by_text("more than one prediction for the same query").first).to_be_visible()
        first.close()
    finally:
        stop_server(process)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def test_an_upload_over_the_limit_is_refused_before_the_server_receives_it(browser: Browser, tmp_path: Path) -> None:
    """A 190 MiB upload used to pass the 200 MB upload limit, arrive whole and be refused by the 64 MiB reader
    limit only in the parsing child (server peak 314 -> 685 MB, +182 MB still held). The cap is now the
    readers' 64 MiB, and the browser refuses a larger file before sending any of it."""
    manifest = _workspace(tmp_path)
    manifest.write_text(manifest.read_text().split("\n\n[[runs]]")[0] + "\n")  # the good run only
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(70 * 1024 * 1024)
    process, url = start_server(manifest, launcher=False, env={"DST_CACHE_DIR": str(tmp_path / "cache")})
    try:
        page = browser.new_page()
        page.goto(url)
        loaded(page)
        with rerun(page):  # the expander reruns the page on opening: its form is drawn only while open
            page.get_by_text("Upload a run").click()
        before = _rss_mb(process.pid)
        uploader = page.locator('[data-testid="stSidebar"]').get_by_role("region", name="Prediction file")
        uploader.locator('input[type="file"]').set_input_files(str(big))
        expect(uploader).to_contain_text("64", timeout=30_000)
        expect(uploader).to_contain_text("big.jsonl", timeout=30_000)
        expect(uploader.get_by_text("File must be 64.0MB or smaller.")).to_be_visible(timeout=30_000)
        after = _rss_mb(process.pid)
        print(f"server RSS {before:.0f} MB before the 70 MiB file was chosen, {after:.0f} MB after its refusal")
        assert after - before < 20
        page.close()
    finally:
        stop_server(process)
