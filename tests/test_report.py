"""``gpumem report``: the page of the committed H200 run beside a simulated Maxwell run, checked
file by file and then loaded in a real headless browser, so a figure that does not load (a
wrong path, a broken PNG) fails here and not in someone's browser."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpumem.cli import main
from gpumem.plugins import reset_plugins

H200 = Path(__file__).parent / "data" / "h200-run"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Sections that must hold at least one figure (the H200 run has every experiment).
FIGURE_SECTIONS = ("latency", "cache_structure", "tlb_structure", "bandwidth", "ilp",
                   "cpasync", "bank_conflicts", "bulk_copy", "dsmem")
#: A small simulated run: no cache_structure (its search takes seconds on the simulator) and
#: cpasync skipped on Maxwell, so the page has to say what is missing for that run.
SIM_EXPERIMENTS = ("latency", "tlb_structure", "bandwidth", "smem_latency", "smem_bandwidth",
                   "ilp", "cpasync")


class _Page(HTMLParser):
    """<img> sources per enclosing <section>, every src/href, and the findings rows."""

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.images: dict[str, list[str]] = {}
        self.links: list[str] = []
        self.rows: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (table, finding) -> cells
        self._table = ""
        self._row: tuple[str, str] | None = None
        self._cell: list[str] | None = None
        self._cls = ""

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        for key in ("src", "href"):
            if a.get(key):
                self.links.append(a[key])
        if tag == "img":
            self.images.setdefault(self.section or "", []).append(a["src"])
        if tag == "table" and "findings" in (a.get("class") or ""):
            self._table = a.get("data-series", "")
        if tag == "tr" and a.get("data-finding") and self._table:
            self._row = (self._table, a["data-finding"])
            self.rows[self._row] = []
        if tag == "td" and self._row:
            self._cell, self._cls = [], a.get("class") or ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row and self._cell is not None:
            self.rows[self._row].append(("".join(self._cell).strip(), self._cls))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "table":
            self._table = ""


def _browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, "--headless=new", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
         f"--user-data-dir={profile}", "--virtual-time-budget=15000", *args],
        capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "maxwell-sim"
    reset_plugins()
    code = main(["run", "--arch", "maxwell", *SIM_EXPERIMENTS, "--device", "sim", "--quick",
                 "--out", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory, sim_run) -> Path:
    out = tmp_path_factory.mktemp("report") / "page"
    reset_plugins()
    start = time.perf_counter()
    assert main(["report", str(H200), str(sim_run), "--out", str(out)]) == 0
    print(f"report of the H200 and the simulated run: {time.perf_counter() - start:.1f} s")
    return out


@pytest.fixture(scope="module")
def page(report) -> _Page:
    p = _Page()
    p.feed((report / "index.html").read_text(encoding="utf-8"))
    return p


def test_every_figure_is_a_local_png_with_a_valid_svg_twin(report, page):
    imgs = [src for srcs in page.images.values() for src in srcs]
    assert imgs
    for src in imgs:
        assert "/" not in src and (report / src).is_file(), src
        data = (report / src).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000, src
        svg = report / src.replace(".png", ".svg")
        assert ET.parse(svg).getroot().tag.endswith("svg"), svg
    # nothing from the network, nothing outside the folder
    for link in page.links:
        assert not re.match(r"^([a-z]+:|//|/)", link) or link.startswith("#"), link
    assert not list(report.parent.glob(".page.*"))  # no temporary folder left behind


def test_sections_have_figures_and_say_what_is_missing(report, page):
    for section in FIGURE_SECTIONS:
        assert page.images.get(section), f"no figure in section {section}"
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "NVIDIA H200 (h200-run)" in html and "sim gtx980 (maxwell-sim)" in html
    assert "Not shown for sim gtx980 (maxwell-sim): cache_structure not in this run." in html
    assert "cpasync skipped: device has no async_copy probe" in html


def test_findings_table_has_values_expected_values_and_statuses(page):
    for table in ("h200-run", "maxwell-sim"):
        cells = page.rows[(table, "lat.l1")]
        text = [c for c, _ in cells]
        # experiment, finding, value, units, expected, status, source, confidence, method
        assert text[:2] == ["latency", "lat.l1"] and text[3] == "cycle"
        assert text[5] == "pass" and "status-pass" in cells[5][1]
        assert text[4] != "-" and text[6]  # an expected value, with its source
    assert page.rows[("h200-run", "lat.l1")][2][0] == "34"


def test_every_image_loads_in_a_headless_browser(report, page, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome binary on PATH (apt-get install chromium)")
    url = (report / "index.html").resolve().as_uri()
    dom = _headless(browser, tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, dom.stdout[:500]
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    total = re.search(r'data-images-total="(\d+)"', body.group(0))
    assert loaded and total, f"the load script did not run: {body.group(0)}"
    n_img = sum(len(v) for v in page.images.values())
    assert int(total.group(1)) == n_img >= len(FIGURE_SECTIONS)
    assert int(loaded.group(1)) == n_img
    shot = tmp_path / "page.png"
    res = _headless(browser, tmp_path / "profile", "--hide-scrollbars",
                    "--window-size=1300,3000", f"--screenshot={shot}", url)
    assert res.returncode == 0 and shot.stat().st_size > 10_000, res.stderr[-2000:]


def test_bad_input_is_one_line_and_writes_nothing(cli, tmp_path, sim_run):
    out = tmp_path / "out"
    r = cli("report", str(tmp_path / "missing"), "--out", str(out))
    assert r.code == 1 and r.err.count("\n") == 1 and "no such directory" in r.err
    plain = tmp_path / "plain"
    plain.mkdir()
    r = cli("report", str(plain), "--out", str(out))
    assert r.code == 1 and "not a gpumem run directory" in r.err and r.err.count("\n") == 1
    r = cli("report", str(sim_run / "manifest.json"), "--out", str(out))
    assert r.code == 1 and "not a gpumem run directory" in r.err
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "data.txt").write_text("keep me")
    r = cli("report", str(sim_run), "--out", str(taken))
    assert r.code == 2 and "holds no gpumem report" in r.err
    assert (taken / "data.txt").read_text() == "keep me"
    r = cli("report", str(sim_run))
    assert r.code == 2 and "--out" in r.err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain", "taken"]


def test_a_report_replaces_its_own_files_and_only_those(cli, tmp_path, sim_run):
    """Rerun into its own folder: the page is rewritten, a figure the earlier report wrote and
    this one does not is removed, a file of the user's is kept (issue 15: a report once
    replaced the whole folder)."""
    out = tmp_path / "rep"
    r = cli("report", str(sim_run), "--out", str(out))
    assert r.code == 0, r.err
    listing = out / ".gpumem-report"
    listing.write_text(listing.read_text().rstrip("\n") + "\nold.png\n")
    (out / "old.png").write_bytes(b"x")
    (out / "notes.txt").write_text("mine")
    r = cli("report", str(sim_run), "--out", str(out))
    assert r.code == 0, r.err
    assert not (out / "old.png").exists() and (out / "notes.txt").read_text() == "mine"
    assert "gpumem report" in (out / "index.html").read_text()
    assert "Skipped: no run has the cache_structure experiment" in \
        (out / "index.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
