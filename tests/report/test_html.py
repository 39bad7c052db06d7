"""The HTML page: well formed, self-contained, escaped, and rendered by a real browser."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracesim import _semconv as sc
from tracesim._report import check_gates, parse_gate, read_report, render_html
from tracesim.cli import main

from .chromium import CHROMIUM, INSTALL, Page
from .tracefiles import TraceWriter, result, write_known, write_timeline

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_FORBIDDEN_TAGS = {"script", "iframe", "object", "embed", "img", "link", "base", "form", "audio", "video"}
_URL_ATTRIBUTES = {"src", "href", "xlink:href", "action", "formaction", "poster", "srcset", "background"}

HOSTILE_SPAN = "<script>alert(1)</script>"
HOSTILE_EVALUATOR = '"><img src=x onerror=alert(2)>'
HOSTILE_LABEL = "</text></svg><script>alert(3)</script>"
HOSTILE_USER = "<b onmouseover=alert(4)>bold</b>"


class StructureChecker(HTMLParser):
    """Balanced tags, nothing that fetches or runs, and the page's text as a browser reads it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._check(tag, attrs)
        if tag not in _VOID:
            self.stack.append(tag)
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._check(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style and ("url(" in data or "@import" in data):
            self.problems.append("stylesheet loads a resource")
        self.text.append(data)

    def _check(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in _FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"event handler {name} on <{tag}>")
            if name in _URL_ATTRIBUTES and not (value or "").startswith("#"):
                self.problems.append(f"{name}={value!r} on <{tag}>")
            if name == "style" and "url(" in (value or ""):
                self.problems.append(f"style url on <{tag}>")


def check_structure(page: str) -> StructureChecker:
    checker = StructureChecker()
    checker.feed(page)
    checker.close()
    assert checker.problems == []
    assert checker.stack == [], f"unclosed: {checker.stack}"
    return checker


def _write_hostile(w: TraceWriter) -> None:
    write_known(w)
    lev = result(HOSTILE_EVALUATOR, 0.4, passed=False, threshold=0.5, label=HOSTILE_LABEL)
    w.span(HOSTILE_SPAN, kind="TOOL", attributes={"user.id": HOSTILE_USER}, results=[lev], error=True)


@pytest.fixture
def hostile_file(writer: Callable[..., TraceWriter]) -> Path:
    w = writer("<i>hostile</i>.jsonl")
    _write_hostile(w)
    w.close()
    return w.path


def test_page_is_well_formed_and_self_contained(known_file: Path) -> None:
    report = read_report([known_file])
    page = render_html(report, check_gates(report, [parse_gate("levenshtein=0.9")]))

    checker = check_structure(page)

    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page
    assert checker.tags.count("svg") == 4  # three score histograms and the latency chart
    assert checker.tags.count("line") >= 2
    text = "".join(checker.text)
    for expected in ["66.7%", "0.783", "385.0 ms", "threshold 0.8", "helpful 1, unhelpful 1", "fail"]:
        assert expected in text
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


def test_hostile_names_are_escaped(hostile_file: Path) -> None:
    report = read_report([hostile_file], group_by="user.id")
    page = render_html(report)

    checker = check_structure(page)  # no <script>, <img> or on* attribute got through

    text = "".join(checker.text)
    for hostile in (HOSTILE_SPAN, HOSTILE_EVALUATOR, HOSTILE_LABEL, HOSTILE_USER, "<i>hostile</i>.jsonl"):
        assert hostile in text
    assert "<script" not in page.lower()


def test_grouped_and_empty_pages(known_file: Path, tmp_path: Path) -> None:
    grouped = check_structure(render_html(read_report([known_file], group_by=sc.GEN_AI_AGENT_NAME)))
    assert "support · answer" in "".join(grouped.text)
    empty_file = tmp_path / "empty.jsonl"
    empty_file.touch()
    empty = check_structure(render_html(read_report([empty_file])))
    assert "No spans found." in "".join(empty.text)
    assert "svg" not in empty.tags


@pytest.fixture
def chromium_profile(tmp_path: Path) -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"needs {CHROMIUM}, missing here (install it with: {INSTALL})")
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    return profile


_FACTS = """(() => {
const all = selector => [...document.querySelectorAll(selector)];
const bars = all('svg.histogram rect.bar');
return JSON.stringify({
  charts: all('svg.chart').map(s => [s.classList[1], s.getBoundingClientRect().width]),
  bars: bars.map(r => Number(r.dataset.count)),
  barHeights: bars.map(r => r.getBoundingClientRect().height),
  thresholds: document.querySelectorAll('svg line.threshold').length,
  latencyRows: [...document.querySelectorAll('g.latency-row')].map(g => g.dataset.span),
  scripts: document.scripts.length,
  images: document.images.length,
  bold: document.querySelectorAll('b[onmouseover]').length,
  text: document.body.innerText,
});
})()"""


def test_page_renders_in_headless_chromium(
    hostile_file: Path, tmp_path: Path, chromium_profile: Path
) -> None:
    page_path = tmp_path / "report.html"
    assert (
        main(["report", str(hostile_file), "--html", str(page_path), "--fail-under", "levenshtein=0.5"]) == 0
    )
    url = page_path.as_uri()

    with Page(chromium_profile) as page:
        page.load(url)
        facts = page.evaluate(_FACTS)
        page.screenshot(tmp_path / "report.png")

    facts = json.loads(facts)
    assert page.requests == [url]  # the page itself, nothing else
    kinds = [kind for kind, _ in facts["charts"]]
    assert kinds == ["histogram"] * 4 + ["latency"]
    assert all(width > 100 for _, width in facts["charts"])
    assert sum(facts["bars"]) == 3 + 2 + 1 + 1  # scored results of levenshtein, human, rouge, hostile
    assert max(facts["barHeights"]) > 50
    assert facts["thresholds"] == 2
    assert facts["latencyRows"] == [HOSTILE_SPAN, "answer", "retrieve", "search"]
    assert (facts["scripts"], facts["images"], facts["bold"]) == (0, 0, 0)
    for expected in ["66.7%", "0.783", HOSTILE_SPAN, HOSTILE_EVALUATOR, "threshold 0.8", "pass"]:
        assert expected in facts["text"]
    assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG")


def test_chromium_request_log_sees_external_fetches(tmp_path: Path, chromium_profile: Path) -> None:
    # The control for the assertion above: a page that does fetch shows up in the log.
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    with Page(chromium_profile) as page:
        page.load(leaky.as_uri())
    assert "http://127.0.0.1:9/x.png" in page.requests


def _write_straddling(w: TraceWriter) -> None:
    """``f1`` with threshold 0.75: the bin [0.7, 0.8) holds a failure (0.72) and two passes (0.78)."""
    for i, score in enumerate((0.72, 0.78, 0.78, 0.95)):
        w.span(
            "grade",
            kind="TOOL",
            start_s=i * 30,
            results=[result("f1", score, passed=score >= 0.75, threshold=0.75)],
        )


def test_histogram_bars_show_each_results_decision(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    _write_straddling(w)
    w.close()
    report = read_report([w.path])

    page = render_html(report)

    f1 = report.evaluator("f1")
    assert f1 is not None
    assert (f1.histogram.counts[7], f1.histogram.passed[7], f1.histogram.failed[7]) == (3, 2, 1)
    assert (f1.histogram.counts[9], f1.histogram.passed[9], f1.histogram.failed[9]) == (1, 1, 0)
    text = "".join(check_structure(page).text)
    assert "passed, failed, no pass/fail decision (each result's own decision" in text
    assert "[0.7, 0.8): 3 (2 passed, 1 failed)" in text  # the bar's title
    assert 'aria-label="Scores of f1: 4 scored, 3 passed, 1 failed; threshold 0.75"' in page
    assert (page.count('<rect class="failed"'), page.count('<rect class="passed"')) == (1, 2)


_WIDTH_FACTS = """(() => {
const all = selector => [...document.querySelectorAll(selector)];
const inside = e => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth;
};
const fits = e => e.scrollWidth <= e.clientWidth && inside(e);
return JSON.stringify({
  window: window.innerWidth,
  width: document.documentElement.clientWidth,  // the window less its vertical scroll bar
  pageWidth: document.documentElement.scrollWidth,
  notices: all('p.notice.scoring').filter(inside).length,
  legends: all('#evaluators p.legend').filter(inside).length,
  trends: all('#timeline svg.chart').filter(inside).map(s => s.classList[2]),
  segments: [all('svg.histogram rect.failed').length, all('svg.histogram rect.passed').length],
  overflowing: all('section, figure, .scroll, p.notice').filter(e => !fits(e))
    .map(e => e.outerHTML.slice(0, 80)),
  scripts: document.scripts.length,
  text: document.body.innerText,
});
})()"""


@pytest.mark.parametrize("width", [1400, 1000])
def test_new_sections_fit_in_headless_chromium(
    width: int, writer: Callable[..., TraceWriter], tmp_path: Path, chromium_profile: Path
) -> None:
    w = writer()
    write_timeline(w)
    _write_straddling(w)
    w.close()
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(read_report([w.path])), encoding="utf-8")

    with Page(chromium_profile) as page:
        page.resize(width)
        page.load(page_path.as_uri())
        facts = json.loads(page.evaluate(_WIDTH_FACTS))
        page.screenshot(tmp_path / f"report-{width}.png")

    assert page.requests == [page_path.as_uri()]
    assert facts["window"] == width
    assert facts["pageWidth"] == facts["width"]  # no sideways scrolling
    assert facts["overflowing"] == []  # every section, chart and table within its box
    assert (facts["notices"], facts["legends"]) == (2, 1)
    assert sorted(facts["trends"]) == ["evaluator-trend"] * 3 + ["span-trend"] * 3
    assert facts["segments"] == [
        2,
        3,
    ]  # failed: levenshtein 0.5, f1 0.72; passed: levenshtein 0.9, f1 0.78, 0.95
    assert facts["scripts"] == 0
    for expected in [
        "Over time, per 2 min (UTC, by span start)",
        "never scored",
        "pass rate (left)",  # a timeline caption
        "2 (1 missing)",
    ]:
        assert expected in facts["text"]
    assert (tmp_path / f"report-{width}.png").read_bytes().startswith(b"\x89PNG")


def test_hostile_names_in_the_timeline_are_escaped(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span(HOSTILE_SPAN, start_s=0, results=[result(HOSTILE_EVALUATOR, 0.3, passed=False, threshold=0.5)])
    w.span(HOSTILE_SPAN, start_s=900, results=[result(HOSTILE_EVALUATOR, 0.6, passed=True, threshold=0.5)])
    w.close()

    page = render_html(read_report([w.path]))

    timeline = page.split('<section id="timeline">')[1].split("</section>")[0]
    text = "".join(check_structure(page).text)
    assert HOSTILE_SPAN in text
    assert HOSTILE_EVALUATOR in text
    assert "<script" not in timeline
    assert "<img" not in timeline
