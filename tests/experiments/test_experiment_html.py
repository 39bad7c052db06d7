"""The HTML page: self-contained, escaped, worst cases first, repeats summarised."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from tracesim.evaluators import ExactMatch
from tracesim.experiments import Case, Dataset

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "div", "b", "section",
    "table", "thead", "tbody", "tr", "th", "td", "code", "br", "footer",
}  # fmt: skip


class Page(HTMLParser):
    """Tags, attributes and text of the page, as a browser would read them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []
        self.cases: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        found = dict(attrs)
        if tag == "tr" and found.get("class") == "case":
            self.cases.append(found["data-case-id"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


class Hostile(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


def hostile_task(question: str) -> str:
    if question == "crash":
        raise Hostile
    if question == "escape":
        raise ValueError("</td><script>alert(3)</script>")
    return "\x1b[2J<img src=x onerror=alert(2)>"


def test_text_from_cases_cannot_inject_markup_or_fetch(tmp_path: Path) -> None:
    dataset = Dataset(
        [
            Case("<script>alert(1)</script>", "\u202eevil", id='"><b>x</b>'),
            Case("crash", "x", id="crash"),
            Case("escape", "x", id="escape"),
        ]
    )
    report = dataset.evaluate(hostile_task, evaluators=[ExactMatch()])
    assert report.row("crash").error == "Hostile: <Hostile.__str__ raised>"
    page = Page()
    html = report.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    page.feed(html)
    assert page.tags <= ALLOWED_TAGS
    assert page.attributes <= {
        "lang",
        "charset",
        "http-equiv",
        "content",
        "name",
        "class",
        "id",
        "data-case-id",
        "data-trace-ids",
    }
    assert "http" not in html.split("<body>")[1]
    assert "default-src 'none'" in html
    text = "".join(page.text)
    assert "<script>alert(1)</script>" in text  # shown as text, not run
    assert "␛[2J<img src=x onerror=alert(2)>" in text  # the escape character made visible
    assert "\\u202eevil" in text  # a bidirectional override cannot reorder the page
    assert page.cases == ["crash", "escape", '"><b>x</b>']  # errors first (ties by id), then the failure


def test_repeats_show_pass_at_k_and_spread(tmp_path: Path) -> None:
    outcomes = iter(["4", "5", "4"] * 2)
    dataset = Dataset([Case("2+2", "4", id="add"), Case("2*2", "4", id="mul")])
    report = dataset.evaluate(lambda q: next(outcomes), evaluators=["exact"], repeat=3, max_concurrency=1)
    page = Page()
    page.feed(report.to_html(tmp_path / "report.html").read_text(encoding="utf-8"))
    text = " ".join(" ".join(page.text).split())
    assert "0.667 pass@1 1.000 pass@3 0.000 pass^3" in text  # the cards
    assert "2/3 passed" in text
    assert "0.667 ± 0.577" in text
