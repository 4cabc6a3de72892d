"""The HTML report renders in a real browser with no network: headless Chromium runs the page's
script and we assert on the DOM it built (heatmap cells, finding rows, rule anchors).

Needs Debian's `chromium` (CI installs it); skips, saying so, where it is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from caiconform.report.build import write_report
from caiconform.results.expectations import load_expectations

DATA = Path(__file__).parent / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless browser test needs Debian's `chromium` on PATH"
)


class _Elements(HTMLParser):
    """Every start tag of the dumped DOM with its attributes and, for the tags we inspect, its
    text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict] = []
        self._open: list[dict] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if tag not in ("br", "meta", "input", "col"):
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()["tag"] == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element["text"] += data

    def having(self, tag: str, css_class: str) -> list[dict]:
        return [
            e
            for e in self.elements
            if e["tag"] == tag and css_class in (e["attrs"].get("class") or "").split()
        ]


def _dump_dom(page: Path, profile: Path) -> str:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


EXPECTATIONS = """
expectations:
  - rule: CAI-SYNC-CONSUMER
    producer: torch
    consumer: cupy
    reason: cupy does not wait on the exported stream
    link: https://example.org/issue/7
  - rule: CAI-SHAPE-TUPLE
    producer: warp
    reason: stale
"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[_Elements, dict]:
    out = tmp_path_factory.mktemp("report")
    (out / "expect.yaml").write_text(EXPECTATIONS)
    entries = load_expectations(out / "expect.yaml")
    written = write_report([DATA / "run-h100", DATA / "run-h200"], out, entries)
    parser = _Elements()
    parser.feed(_dump_dom(out / "index.html", tmp_path_factory.mktemp("profile")))
    return parser, written.matrix


def test_script_ran_to_the_end(rendered):
    dom, _ = rendered
    (body,) = [e for e in dom.elements if e["tag"] == "body"]
    assert body["attrs"].get("data-rendered") == "1"


def test_heatmap_has_one_cell_per_matrix_cell_with_its_counts(rendered):
    dom, matrix = rendered
    cells = dom.having("td", "cell")
    drawn = [c for c in cells if "empty" not in c["attrs"]["class"].split()]
    assert len(drawn) == len(matrix["cells"])
    by_key = {
        (c["attrs"]["data-check"], c["attrs"]["data-producer"], c["attrs"]["data-consumer"]): c
        for c in drawn
    }
    cell = by_key[("roundtrip", "numba", "torch")]
    assert (cell["attrs"]["data-passed"], cell["attrs"]["data-tested"]) == ("2", "4")
    assert cell["attrs"]["data-fraction"] == "0.5000"
    assert cell["attrs"]["data-worst"] == "rejected"
    assert cell["text"].startswith("2/4")
    assert "rejected: 2" in cell["attrs"]["title"]
    assert "background" in cell["attrs"]["style"]
    skipped = by_key[("streams", "reference", "jax")]
    assert skipped["attrs"]["data-fraction"] == "" and skipped["text"] == "skip"
    # producer-only families draw one consumer column
    assert by_key[("schema", "torch", "\u2014")]["attrs"]["data-tested"] == "5"


def test_one_heatmap_per_family(rendered):
    dom, matrix = rendered
    tables = dom.having("table", "heatmap")
    assert [t["attrs"]["data-check"] for t in tables] == list(matrix["families"])


def test_findings_render_with_rule_links_and_repro_links(rendered):
    dom, matrix = rendered
    rows = dom.having("tr", "finding")
    assert len(rows) == len(matrix["findings"])
    rules = {r["attrs"]["data-rule"] for r in rows}
    assert {"CAI-DATA-ZERO-SIZE-NULL", "CAI-SYNC-CONSUMER", "CAI-PORT-NEGATIVE-STRIDES"} <= rules
    links = {a["attrs"]["href"] for a in dom.having("a", "rule-link")}
    assert "#rule-CAI-SYNC-CONSUMER" in links
    anchors = {e["attrs"].get("id") for e in dom.having("div", "rule-entry")}
    assert {link[1:] for link in links} <= anchors
    repros = [a["attrs"]["href"] for a in dom.having("a", "repro")]
    assert repros and all(href.endswith(".py") for href in repros)
    crash = next(r for r in rows if r["attrs"]["data-outcome"] == "crash")
    # the journal's "</script><b>" arrives as text, not markup
    assert "</script><b>not markup</b>" in crash["text"]
    # (the page's own <b> elements, the verdict's "N failing", are markup of the report)
    assert not [e for e in dom.elements if e["tag"] == "b" and "not markup" in e["text"]]


def test_scores_and_environment_render(rendered):
    dom, matrix = rendered
    scores = {r["attrs"]["data-library"] for r in dom.having("tr", "score")}
    assert scores == set(matrix["scores"])
    env_text = " ".join(r["text"] for r in dom.having("tr", "env"))
    assert "NVIDIA H100 80GB HBM3" in env_text and "NVIDIA H200" in env_text


def test_expected_findings_and_expectation_entries_render(rendered):
    dom, _ = rendered
    expected = [r for r in dom.having("tr", "finding") if "expected" in r["attrs"]["class"].split()]
    assert [r["attrs"]["data-rule"] for r in expected] == ["CAI-SYNC-CONSUMER"]
    links = [
        a
        for a in dom.elements
        if a["tag"] == "a" and a["attrs"].get("href", "").startswith("https://example.org")
    ]
    assert [a["text"] for a in links] == ["cupy does not wait on the exported stream"]
    entries = {
        r["attrs"]["data-status"]: r["attrs"]["data-error"]
        for r in dom.having("tr", "expectation-entry")
    }
    assert entries == {"xfail": "0", "unmatched": "1"}
    (summary,) = [e for e in dom.elements if e["attrs"].get("id") == "summary"]
    # one notion of group (the catalogue's), said once, with the verdict's threshold; the entry
    # about warp, which did not run here, is a note, not an error
    assert (
        "5 defect(s), one per bug, in 5 group(s) (one library, role, rule and outcome each); "
        "by severity: 1 corrupts, 2 crashes" in (summary["text"])
    )
    assert "; 3 failing at --fail-on corrupts,crashes,refuses-valid" in summary["text"]
    assert "finding group" not in summary["text"] and "non-conformance" not in summary["text"]
    assert summary["text"].endswith("; 0 expectation entry error(s).")


def test_catalogue_rows_carry_severity_and_status_and_skips_are_grouped(rendered):
    dom, matrix = rendered
    rows = dom.having("tr", "group")
    assert [r["attrs"]["data-severity"] for r in rows] == [
        g["severity"] for g in matrix["catalogue"]["groups"]
    ]
    assert [r["attrs"]["data-status"] for r in rows] == matrix["verdict"]["status"]
    assert [r["attrs"]["id"] for r in rows] == [f"group-{i + 1}" for i in range(len(rows))]
    reasons = dom.having("tr", "skip-reason")
    assert len(reasons) == len(matrix["skip_reasons"])
