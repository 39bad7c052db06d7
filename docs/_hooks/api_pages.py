"""MkDocs hook: the API reference pages, made from the nav so that adding one is a one-line change.

A nav entry ``api/<module>.md`` whose file does not exist (``api/tracesim.batch.md``) becomes a
page that renders ``<module>`` with mkdocstrings: its docstring, then the names in its
``__all__`` with their signatures and docstrings. A file written by hand at that path is used
instead. The list of modules on ``api/index.md`` (the ``<!-- api-modules -->`` line) is made
from the same nav entries, so the nav is the only list to keep.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

_API_PAGE = re.compile(r"^api/(?!index\.md$)(?P<module>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\.md$")
_PLACEHOLDER = "<!-- api-modules -->"


def _nav_paths(entries: Any) -> Iterator[str]:
    """Every page path of the nav, depth first, in nav order."""
    if isinstance(entries, str):
        yield entries
    elif isinstance(entries, dict):
        for value in entries.values():
            yield from _nav_paths(value)
    elif isinstance(entries, list):
        for entry in entries:
            yield from _nav_paths(entry)


def _api_modules(config: MkDocsConfig) -> list[tuple[str, str]]:
    """(module, page path) of every API page the nav names."""
    found = []
    for path in _nav_paths(config.nav or []):
        match = _API_PAGE.match(path)
        if match:
            found.append((match["module"], path))
    return found


def _search_paths(config: MkDocsConfig) -> list[Path]:
    """Where mkdocstrings' python handler looks for modules (its ``paths``)."""
    root = Path(config.config_file_path).parent
    handlers = config.plugins["mkdocstrings"].config["handlers"]
    return [root / path for path in handlers.get("python", {}).get("paths", ["."])]


def _summary(module: str, config: MkDocsConfig) -> str:
    """The first paragraph of the module's docstring, on one line: what the module is for.

    Read from the source with ``ast`` (the module is neither imported nor loaded whole by griffe,
    which would read every submodule again for each page).
    """
    relative = Path(*module.split("."))
    for folder in _search_paths(config):
        for source in (folder / relative / "__init__.py", folder / relative.with_suffix(".py")):
            if source.is_file():
                doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
                return doc.split("\n\n", 1)[0].replace("\n", " ").replace("|", "\\|")
    raise FileNotFoundError(f"module {module} (an API page in the nav) is not under {_search_paths(config)}")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for module, path in _api_modules(config):
        if files.get_file_from_path(path) is None:
            content = f"# `{module}`\n\n::: {module}\n"
            files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if _PLACEHOLDER not in markdown:
        return markdown
    rows = ["| module | what it is |", "|---|---|"]
    for module, path in _api_modules(config):
        link = path.removeprefix("api/")
        rows.append(f"| [`{module}`]({link}) | {_summary(module, config)} |")
    return markdown.replace(_PLACEHOLDER, "\n".join(rows))
