"""YAML documents read within limits: nodes and nesting counted while composed, aliases costed.

PyYAML composes a document in pure Python, at about 600 bytes and 30 microseconds a node, so
YAML has limits of its own, checked by a ``yaml.SafeLoader`` subclass as it composes, before
anything is built: `MAX_YAML_BYTES` of text, `MAX_YAML_NODES` nodes, `MAX_YAML_DEPTH` levels
(aliases expanded), and `MAX_YAML_ALIAS_NODES` nodes that aliases may add once expanded.
`tracesim._inputs` describes every limit and re-exports these names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracesim._inputs._error import InputError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_YAML_ALIAS_NODES",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "bounded_loader",
    "load_yaml",
    "yaml_error",
]

MAX_YAML_DEPTH = 100
MAX_YAML_ALIAS_NODES = 100_000
MAX_YAML_BYTES = 16 * 1024 * 1024
MAX_YAML_NODES = 500_000


def load_yaml(text: str, path: str) -> Any:
    """The YAML document ``text`` (from ``path``), with `MAX_YAML_DEPTH` and the alias budget.

    Example:
        >>> load_yaml("base: &b {model: m}\\ncase: {<<: *b, input: hi}", "cases.yaml")["case"]
        {'model': 'm', 'input': 'hi'}
        >>> bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\\n" + "".join(
        ...     f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\\n" for p, n in zip("abcd", "bcde"))
        >>> try:
        ...     load_yaml(bomb, "cases.yaml")
        ... except InputError as exc:
        ...     print(exc)
        cases.yaml, line 5: YAML aliases expand to more than 100,000 nodes (the limit on aliases)

    Raises:
        InputError: over a limit, or not YAML; the message names the file and the line.
    """
    loader = bounded_loader(text, path)
    try:
        return loader.get_single_data()
    except InputError:
        raise
    except RecursionError:
        raise InputError(path, f"YAML nested too deeply to read (limit {MAX_YAML_DEPTH})") from None
    except Exception as exc:  # yaml.YAMLError, and what a constructor raises for a bad scalar
        raise yaml_error(exc, path) from None
    finally:
        loader.dispose()


def yaml_error(exc: BaseException, path: str) -> InputError:
    """An `InputError` for a ``yaml.YAMLError``, naming the line it found."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return InputError(path, f"not valid YAML ({problem})", line=mark.line + 1 if mark is not None else None)


def bounded_loader(text: str, path: str) -> yaml.SafeLoader:
    """A ``yaml.SafeLoader`` over ``text`` that refuses deep documents and costly aliases.

    Use its ``get_single_node``/``construct_document`` as a SafeLoader's; call ``dispose``.

    Raises:
        InputError: ``text`` is longer than `MAX_YAML_BYTES` (the loader refuses more than
            `MAX_YAML_NODES` nodes, and deep or costly aliases, as it composes).
    """
    if len(text) > MAX_YAML_BYTES:  # characters: at least as many bytes
        raise InputError(
            path, f"{len(text):,} characters of YAML, more than {MAX_YAML_BYTES:,} bytes", limit="YAML size"
        )
    loader: yaml.SafeLoader = _loader_class()(text, path)
    return loader


_LOADER: Any = None


def _loader_class() -> Any:
    global _LOADER
    if _LOADER is None:
        _LOADER = _make_loader()
    return _LOADER


def _make_loader() -> Any:
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        """Counts nodes and nesting while composing, and what each alias adds once expanded."""

        def __init__(self, stream: str, path: str) -> None:
            super().__init__(stream)
            self.path = path
            self._depth = 0
            self._open: list[str | None] = []  # anchors of the collections being composed
            self._added = 0
            self._nodes = 0
            self._measured: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, depth), expanded

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                line = event.start_mark.line + 1
                if event.anchor in self._open:
                    raise InputError(
                        self.path, f"YAML alias *{event.anchor} is inside its own anchor", line=line
                    )
                node = super().compose_node(parent, index)
                nodes, depth = self._measure(node)
                self._added += nodes
                if self._added > MAX_YAML_ALIAS_NODES:
                    raise InputError(
                        self.path,
                        f"YAML aliases expand to more than {MAX_YAML_ALIAS_NODES:,} nodes",
                        line=line,
                        limit="aliases",
                    )
                if self._depth + depth > MAX_YAML_DEPTH:
                    raise self._too_deep(line)
                return node
            event = self.peek_event()  # type: ignore[no-untyped-call]
            self._nodes += 1
            if self._nodes > MAX_YAML_NODES:
                raise InputError(
                    self.path,
                    f"YAML of more than {MAX_YAML_NODES:,} nodes",
                    line=event.start_mark.line + 1,
                    limit="YAML nodes",
                )
            self._depth += 1
            if self._depth > MAX_YAML_DEPTH:
                raise self._too_deep(event.start_mark.line + 1)
            self._open.append(event.anchor)
            try:
                return super().compose_node(parent, index)
            finally:
                self._open.pop()
                self._depth -= 1

        def _too_deep(self, line: int) -> InputError:
            return InputError(
                self.path, f"YAML nested deeper than {MAX_YAML_DEPTH} levels", line=line, limit="nesting"
            )

        def _measure(self, node: Any) -> tuple[int, int]:
            # Every node was composed within the depth limit, so this recursion is bounded too.
            known = self._measured.get(id(node))
            if known is not None:
                return known
            if isinstance(node, yaml.SequenceNode):
                parts = [self._measure(child) for child in node.value]
            elif isinstance(node, yaml.MappingNode):
                parts = [self._measure(item) for pair in node.value for item in pair]
            else:
                parts = []
            found = (1 + sum(p[0] for p in parts), 1 + max((p[1] for p in parts), default=0))
            self._measured[id(node)] = found
            return found

    return BoundedLoader
