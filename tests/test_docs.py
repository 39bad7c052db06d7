"""The README, the guides and the examples say what the code does; the site's pages and links hold."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tracesim._config import SETTINGS
from tracesim.tracefile import load_spans

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_API_PAGE = re.compile(r"api/(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.md")


def test_the_configuration_table_lists_every_setting_and_variable() -> None:
    guide = (REPO / "docs" / "configuration.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", guide, re.MULTILINE)}
    for setting in SETTINGS:
        assert setting.name in rows, f"docs/configuration.md lacks a row for {setting.name}"
        for variable in setting.env:
            assert f"`{variable}`" in rows[setting.name], (
                f"docs/configuration.md row {setting.name} lacks {variable}"
            )


def test_the_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_the_quickstart_example_runs_and_writes_the_tree(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Warsaw, in Poland"
    spans = {s.name: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    assert spans["retrieve"].parent_span_id == spans["answer"].span_id
    assert spans["lookup"].parent_span_id == spans["answer"].span_id
    assert spans["answer"].resource["service.name"] == "support-bot"


def test_the_online_scoring_example_scores_against_its_golden_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "online_scoring" / "agent.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    spans = {s.attributes["input.value"]: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    curie = spans["Where was Marie Curie born?"].attributes
    assert curie["tracesim.eval.levenshtein.score"] == 0.79
    assert curie["tracesim.eval.levenshtein.passed"] is False
    assert curie["tracesim.eval.rouge.passed"] is True
    assert curie["tracesim.expected.value"] == "Marie Curie was born in Warsaw."
    everest = spans["How high is Mount Everest?"].attributes
    assert everest["tracesim.eval.rouge.status"] == "skipped"


def test_the_catalogue_examples_are_real() -> None:
    from tracesim.evaluators import from_config

    guide = (REPO / "docs" / "evaluators.md").read_text()
    output, expected = "Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Warsaw."
    rows = re.findall(r"^\| `(\w+)` \| `\w+` \|.*\| ([0-9.]+)(?: \((\w+)[^)]*\))? \|$", guide, re.MULTILINE)
    assert len(rows) == 11
    for type_name, score, label in rows:
        result = from_config({"type": type_name}).evaluate(output, expected)
        assert result.score is not None
        assert round(result.score, 4) == float(score), type_name
        assert (result.label or "") == label, type_name


def test_the_llm_judge_example_traces_its_model_calls_and_judges_online(tmp_path: Path) -> None:
    pytest.importorskip(
        "opentelemetry.instrumentation.genai.openai",
        reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
    )
    from llm_server import LLMServer

    with LLMServer() as server:
        server.judge = lambda request: (
            '{"reason": "Same facts.", "score": 5}'
            if "<rubric>" in json.dumps(request)
            else "Warsaw, Poland."
        )
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "example"}
        result = subprocess.run(
            [sys.executable, str(REPO / "examples" / "llm_judge" / "agent.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    agents = [s for s in spans if s.name == "answer"]
    llm_calls = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert len(agents) == 2
    assert len(llm_calls) == 2  # the agent's calls; the judge's own calls are not spans
    assert {s.parent_span_id for s in llm_calls} == {s.span_id for s in agents}
    for agent in agents:
        assert agent.attributes["tracesim.eval.llm_similarity.score"] == 5.0
        assert agent.attributes["session.id"] == "demo-session"


def _nav_paths(entries: object) -> list[str]:
    """Every page path the nav names, in nav order."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, dict):
        return [path for value in entries.values() for path in _nav_paths(value)]
    if isinstance(entries, list):
        return [path for entry in entries for path in _nav_paths(entry)]
    return []


def _pages() -> set[str]:
    """The Markdown pages under docs/, relative to it (the hooks' folder is not part of the site)."""
    return {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_hooks" not in p.parts}


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page() -> None:
    # mkdocs --strict fails on a nav entry with no page, but only notes (INFO) a page not in the nav.
    nav = _nav_paths(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    assert len(nav) == len(set(nav)), (
        f"pages named twice in the nav: {sorted(p for p in nav if nav.count(p) > 1)}"
    )
    assert _pages() - set(nav) == set(), "pages under docs/ that the nav of mkdocs.yml does not name"
    import importlib.util

    for entry in set(nav) - _pages():  # generated by docs/_hooks/api_pages.py: an API page per module
        match = _API_PAGE.fullmatch(entry)
        assert match, f"the nav names {entry}, which is neither under docs/ nor an api/<module>.md page"
        assert importlib.util.find_spec(match["module"]) is not None, f"{entry}: no module {match['module']}"


def _github_anchors(page: Path) -> set[str]:
    """The anchors GitHub (and MkDocs' toc, for these headings) gives the headings of a page."""
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            heading = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", heading).replace(" ", "-"))
    return anchors


def test_the_readme_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t for t in _LINK.findall(readme) if not t.startswith(("http://", "https://", "mailto:"))]
    assert any(t.startswith("docs/api/") for t in targets), "the README links to the API reference"
    for target in targets:
        path, _, anchor = target.partition("#")
        assert (REPO / path).exists(), f"README links to {target}, which does not exist"
        if anchor:
            assert anchor in _github_anchors(REPO / path), f"README links to {target}: no such heading"
    linked = {t.partition("#")[0] for t in targets}
    guides = {f"docs/{p}" for p in _pages() if not p.startswith("api/") and p != "index.md"}
    assert guides <= linked, f"guides the README does not link to: {sorted(guides - linked)}"


def test_the_rules_in_the_guides_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracesim._scoring._selection import compile_rules

    monkeypatch.chdir(tmp_path)  # the golden file the rules name, here
    (tmp_path / "golden.jsonl").write_text(json.dumps({"question": "q", "expected": "a"}) + "\n")
    found = 0
    for page in (REPO / "README.md", DOCS / "online-scoring.md"):  # testing.md shows AgentTest's own
        for block in re.findall(r"^ *```yaml\n(.*?)^ *```", page.read_text(encoding="utf-8"), re.M | re.S):
            document = yaml.safe_load(textwrap.dedent(block))
            if isinstance(document, dict) and "evaluators" in document:
                assert len(compile_rules(document["evaluators"])) == len(document["evaluators"]), page.name
                found += 1
    assert found >= 2, "the README and docs/online-scoring.md show rules"
