"""Texts read back from trace files, redacted (`tracesim._outputs`) as a reader takes them.

``tracesim show`` and ``report`` print what they read, and a trace file another program wrote
may hold secrets tracesim's own exporter would have redacted. Two readers, two shapes:

- ``report`` shows a few fields of each span (names, groups, evaluator names and labels,
  models, error types and messages) and the inputs and outputs of a handful of worst cases.
  It takes each through `Texts` as it takes it, whole, before anything is grouped or cut; each
  distinct short text is redacted once. The long texts it never shows are never scanned.
- ``show`` draws whole spans (``--attributes`` lists every attribute): `redacted_spans` gives
  spans whose names, status messages and keys are redacted, and whose attribute values are
  redacted when first read (`RedactedAttributes`). Whatever a reader gets, by key, ``get``,
  ``items()`` or ``dict()``, has passed the redaction; ids, times, kinds and status codes are
  kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tracesim import _outputs
from tracesim.tracefile import EventRecord, LinkRecord, SpanRecord

__all__ = ["RedactedAttributes", "Texts", "redacted_spans"]

_ABSENT = object()


class RedactedAttributes(Mapping[str, Any]):
    """A read-only view of ``raw`` whose values are redacted (`tracesim._outputs.clean`) when first read.

    ``raw``'s keys must be redacted already (`redacted_spans` does it).

    Example:
        >>> view = RedactedAttributes({"note": "mail marie@curie.org", "n": 3})
        >>> view["note"], view.get("n"), view.get("absent", "-"), dict(view)["note"]
        ('mail [REDACTED:email]', 3, '-', 'mail [REDACTED:email]')
    """

    __slots__ = ("_raw", "_read", "_texts")

    def __init__(self, raw: Mapping[str, Any], texts: dict[str, str] | None = None) -> None:
        self._raw = raw
        self._read: dict[str, Any] = {}
        self._texts = texts if texts is not None else {}  # redacted short strings, shared by a load

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        read = self._read
        if key in read:
            return read[key]
        value = self._raw.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if type(value) is str and len(value) <= _SHARED_TEXT:
            value = _text(value, self._texts)  # kinds, models, labels, user ids: the same few strings
        else:
            value = _outputs.clean(value)
        read[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"RedactedAttributes({dict(self)!r})"


_SHARED_TEXT = 200  # strings up to this length are remembered once redacted, for the whole load


class Texts:
    """The redaction of the texts a report takes from spans: each distinct text redacted once.

    ``tracesim report`` redacts only what it shows, as it takes it: names, groups, evaluator
    names and labels, models, error types and messages, and the explanations, inputs and
    outputs of the worst cases. Most of these repeat from span to span. With ``redact=False``
    texts pass unchanged.

    Example:
        >>> texts = Texts()
        >>> texts("answer"), texts("ask marie@curie.org"), texts.once("to marie@curie.org")
        ('answer', 'ask [REDACTED:email]', 'to [REDACTED:email]')
        >>> Texts(redact=False)("ask marie@curie.org")
        'ask marie@curie.org'
    """

    __slots__ = ("_done", "redact")

    def __init__(self, *, redact: bool = True) -> None:
        self.redact = redact
        self._done: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if not self.redact:
            return value
        done = self._done.get(value)
        if done is None:
            done = self._done[value] = _outputs.text(value)
        return done

    def once(self, value: str) -> str:
        """A text read once (an input, an explanation): redacted, not remembered."""
        return _outputs.text(value) if self.redact else value


def _text(value: str, texts: dict[str, str]) -> str:
    """``value`` redacted, remembered in ``texts``."""
    done = texts.get(value)
    if done is None:
        done = texts[value] = _outputs.text(value)
    return done


def _keyed(raw: Mapping[str, Any], clean_keys: set[str], texts: dict[str, str]) -> Mapping[str, Any]:
    """``raw`` with its keys redacted; ``raw`` itself when no key changes (nearly always)."""
    if clean_keys.issuperset(raw):
        return raw
    changed = False
    for key in raw:
        if key not in clean_keys:
            if _text(key, texts) == key:
                clean_keys.add(key)
            else:
                changed = True
    if not changed:
        return raw
    return {_text(key, texts): value for key, value in raw.items()}


def redacted_spans(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """``spans`` with every text they hold redacted (see the module docstring), ids and times kept.

    Example:
        >>> span = SpanRecord("t", "s", None, "ask marie@curie.org", "INTERNAL", 0, 1, {"q": "x@y.org"})
        >>> (shown,) = redacted_spans([span])
        >>> shown.name, shown.attributes["q"]
        ('ask [REDACTED:email]', '[REDACTED:email]')
    """
    texts: dict[str, str] = {}
    clean_keys: set[str] = set()
    # The spans of one batch share their resource: viewed once (the raw one held, so its id stays its own).
    resources: dict[int, tuple[Mapping[str, Any], RedactedAttributes]] = {}

    def view(raw: Mapping[str, Any]) -> RedactedAttributes:
        return RedactedAttributes(_keyed(raw, clean_keys, texts), texts)

    out = []
    for span in spans:
        known = resources.get(id(span.resource))
        if known is None:
            known = resources[id(span.resource)] = (span.resource, view(span.resource))
        resource = known[1]
        out.append(
            SpanRecord(
                span.trace_id,
                span.span_id,
                span.parent_span_id,
                _text(span.name, texts),
                span.kind,
                span.start_time_unix_nano,
                span.end_time_unix_nano,
                view(span.attributes),
                tuple(
                    EventRecord(_text(e.name, texts), e.time_unix_nano, view(e.attributes))
                    for e in span.events
                ),
                tuple(LinkRecord(k.trace_id, k.span_id, view(k.attributes)) for k in span.links),
                span.status_code,
                _outputs.text(span.status_message) if span.status_message else "",
                resource,
                _text(span.scope, texts),
            )
        )
    return out
