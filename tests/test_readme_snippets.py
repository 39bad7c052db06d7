"""The ```python blocks of the README and the guides run as written: in a fresh interpreter, an empty folder.

Every block of the README and of the guides made from it (``RUN_EVERY_BLOCK``) runs; in the other
pages of docs/, whose blocks are fragments or run by their own tests (tests/experiments,
tests/batch, tests/report), only the blocks marked to run do. The HTML comment on the line before
a fence (invisible on GitHub and on the site) says how a block runs:

- no comment: as a script (on a ``RUN_EVERY_BLOCK`` page); ``<!-- snippet: run -->`` elsewhere.
- ``<!-- snippet: pytest -->``: the block is a test file; pytest runs it and its tests pass.
- ``<!-- snippet: skip reason=... -->``: it needs something the test cannot start here (an OTLP
  collector...); the reason names it. Rather make a snippet self-contained than skip it.

What a snippet says it does is checked too: a line ``print(...)  # TEXT`` must print TEXT, and a
```console block right after a snippet that starts ``$ tracesim show`` must be what ``tracesim
show`` prints in that folder afterwards, but for durations, trace ids and times. Shell blocks are
not run. The programs in examples/ are run by test_docs.py; the README's YAML rules are compiled by
test_rules_on_any_span.py, the guides' by test_docs.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
# The README and the guides cut from it: every python block runs. Other pages run marked blocks.
RUN_EVERY_BLOCK = frozenset(
    {
        "README.md",
        "docs/index.md",
        "docs/getting-started.md",
        "docs/tracing.md",
        "docs/online-scoring.md",
        "docs/llm-calls.md",
        "docs/backends.md",
        "docs/configuration.md",
        "docs/performance.md",
        "docs/development.md",
    }
)
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
TIMEOUT_S = 300  # a fresh interpreter importing tracesim and its evaluators, on a busy machine

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<what>.*?)\s*-->\s*$")
_PRINTS = re.compile(r"^\s*print\(.*\)\s+#\s*(?P<text>.+?)\s*$")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # of the opening fence, 1-based
    end: int  # of the closing fence
    marker: str | None  # what the <!-- snippet: ... --> right before the fence says
    heading: str
    page: str = "README.md"  # relative to the repository


@dataclass(frozen=True)
class Snippet:
    block: Block
    console: Block | None  # the console block right after it, if any

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.block.heading.lower()).strip("-")
        return f"{self.block.page}:{slug}-line{self.block.line}"


def read_blocks(text: str, page: str = "README.md") -> list[Block]:
    """Every fenced block, with the marker before it and the heading it is under."""
    lines = text.splitlines()
    blocks: list[Block] = []
    heading, index = "top", 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        opening = _FENCE.match(line)
        if not opening:
            index += 1
            continue
        end = next(
            i for i in range(index + 1, len(lines)) if lines[i].strip() == "```"
        )  # an unclosed fence is a README bug: StopIteration fails the test
        marker = _MARKER.match(lines[index - 1]) if index else None
        code = textwrap.dedent("\n".join(lines[index + 1 : end])) + "\n"
        blocks.append(
            Block(
                opening["lang"], code, index + 1, end + 1, marker["what"] if marker else None, heading, page
            )
        )
        index = end + 1
    return blocks


def read_snippets(text: str, page: str = "README.md") -> list[Snippet]:
    """The python blocks of one page that run: all of them, or on a marked-only page the marked ones."""
    blocks = read_blocks(text, page)
    lines = text.splitlines()
    snippets = []
    for position, block in enumerate(blocks):
        if block.lang != "python":
            continue
        if page not in RUN_EVERY_BLOCK and block.marker is None:
            continue
        following = blocks[position + 1] if position + 1 < len(blocks) else None
        console = None
        if following is not None and following.lang == "console":
            between = lines[block.end : following.line - 1]
            console = following if not any(line.strip() for line in between) else None
        snippets.append(Snippet(block, console))
    return snippets


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


SNIPPETS = [s for path in PAGES for s in read_snippets(path.read_text(encoding="utf-8"), _name(path))]


def _environment() -> dict[str, str]:
    """The user's environment: no tracesim or OpenTelemetry settings, no pytest of ours; NLTK_DATA kept."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TRACESIM_", "OTEL_", "PYTEST_"))
    }


def _run(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )


def _normalise(text: str) -> list[str]:
    """Lines without what changes from run to run; blank lines dropped.

    That is durations, trace ids, times, and the order of a span's scores: results are listed
    as they arrive, and two scoring workers finish in either order.
    """
    text = re.sub(r"\b[0-9a-f]{32}\b", "<trace id>", text)
    text = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>", text)
    text = re.sub(r"\b\d+(\.\d+)? (µs|ms|s)\b", "<duration>", text)
    lines = []
    for line in text.splitlines():
        scores = re.match(r"^(.*\bscores: )(.*)$", line)
        if scores:
            line = scores[1] + "  ".join(sorted(re.split(r"\s{2,}", scores[2].strip())))
        if line.strip():
            lines.append(line.rstrip())
    return lines


def test_the_readme_has_snippets_and_every_marker_is_understood() -> None:
    assert len(SNIPPETS) >= 3, "the python blocks of the README and the guides were not found"
    assert any(s.block.page == "README.md" for s in SNIPPETS), "the README's quickstart was not found"
    for path in PAGES:
        page = _name(path)
        text = path.read_text(encoding="utf-8")
        python_fences = {block.line - 1 for block in read_blocks(text, page) if block.lang == "python"}
        for number, line in enumerate(text.splitlines(), start=1):
            marker = _MARKER.match(line)
            if marker is None:
                assert "snippet:" not in line or "<!--" not in line, (
                    f"{page} line {number}: a malformed marker"
                )
                continue
            assert number in python_fences, (
                f"{page} line {number}: a marker not right before a ```python fence"
            )
            what = marker["what"]
            assert what in ("pytest", "run") or re.fullmatch(r"skip reason=\S.*", what), (
                f"{page} line {number}: {what!r}; expected 'pytest', 'run' or 'skip reason=WHAT IT NEEDS'"
            )


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_the_snippet_runs_as_written(snippet: Snippet, tmp_path: Path) -> None:
    block = snippet.block
    if block.marker and block.marker.startswith("skip"):
        pytest.skip(f"{block.page} line {block.line}: {block.marker}")
    folder = tmp_path / "snippet"
    folder.mkdir()
    where = f"{block.page} line {block.line} ({block.heading})"
    if block.marker == "pytest":
        (folder / "test_readme_snippet.py").write_text(block.code, encoding="utf-8")
        result = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_readme_snippet.py"], folder)
        assert result.returncode == 0, f"{where}:\n{result.stdout}\n{result.stderr}"
        assert re.search(r"\b\d+ passed\b", result.stdout), result.stdout
        return
    (folder / "readme_snippet.py").write_text(block.code, encoding="utf-8")
    result = _run(["readme_snippet.py"], folder)
    assert result.returncode == 0, f"{where} failed:\n{result.stderr}"
    assert "Traceback" not in result.stderr, f"{where}:\n{result.stderr}"
    if "print(" in block.code:
        assert result.stdout.strip(), f"{where} prints nothing"
    said = iter(result.stdout.splitlines())
    for text in (m["text"] for m in map(_PRINTS.match, block.code.splitlines()) if m):
        assert any(line.strip() == text for line in said), (
            f"{where} does not print {text!r}:\n{result.stdout}"
        )
    if snippet.console is not None and snippet.console.code.startswith("$ tracesim show\n"):
        shown = _run(["-m", "tracesim", "show"], folder)
        assert shown.returncode == 0, shown.stderr
        written = snippet.console.code.split("\n", 1)[1]
        assert _normalise(shown.stdout) == _normalise(written), (
            f"{block.page} line {snippet.console.line} is not what `tracesim show` prints:\n{shown.stdout}"
        )
