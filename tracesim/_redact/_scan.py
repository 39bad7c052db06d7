"""One text being scanned: the spans rules claim, and small helpers the rules share."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from typing import Generic, TypeVar

from tracesim._redact._native import Needle

_Found = TypeVar("_Found")

MARGIN = 256  # no common secret is longer: a cut backs off this far to keep a secret whole
_CUT_MARK = "…[truncated"  # what tracesim._capture.cut appends: a value touching it was cut
_FIND_LOOPS = 8  # at most this many anchors visited with str.find before one regex scan takes over
_MAX_QUOTED = 4096  # a quoted value not closed within this many characters is treated as cut
_MIN_VALUE = 6  # shorter values after a key name are left alone ("token": "abc", "pwd=1234")


def _lower(text: str) -> str:
    """``text`` lower-cased, character for character: positions in it are positions in ``text``."""
    low = text.lower()
    if len(low) != len(text):  # only "İ" lowers to two characters; keep positions
        low = text.replace("\u0130", "I").lower()
    return low


def _mark(label: str) -> str:
    return f"[REDACTED:{label}]"


# ---------------------------------------------------------------- one text being scanned


class _Scan:
    """A text, its lower-cased copy (made once, when a rule needs it) and the spans to replace.

    Spans stay sorted and disjoint: a rule claims only what earlier rules left, so a secret
    found twice is replaced once, and one glued to another is still replaced.
    """

    __slots__ = ("_low", "_new", "spans", "starts", "text")

    def __init__(self, text: str, low: str | None = None) -> None:
        self.text = text
        self._low = low
        self.spans: list[tuple[int, int, str]] = []
        self.starts: list[int] = []
        self._new: list[tuple[int, int, str]] = []

    def low(self) -> str:
        if self._low is None:
            self._low = _lower(self.text)
        return self._low

    def add(self, start: int, end: int, label: str) -> bool:
        """Claim the parts of ``start:end`` no earlier rule claimed; whether there were any."""
        i = bisect_right(self.starts, start)
        if i and self.spans[i - 1][1] > start:
            start = self.spans[i - 1][1]
        added = False
        while start < end:  # a rule reports left to right, so its own spans never overlap
            stop = min(end, self.starts[i]) if i < len(self.starts) else end
            if stop > start:
                self._new.append((start, stop, _mark(label)))
                added = True
            start = self.spans[i][1] if stop < end else end
            i += 1
        return added

    def claimed(self, i: int) -> bool:
        """Whether an earlier rule claimed the character at ``i``."""
        k = bisect_right(self.starts, i)
        return k > 0 and self.spans[k - 1][1] > i

    def commit(self) -> None:
        if self._new:
            self.spans = sorted(self.spans + self._new)
            self.starts = [span[0] for span in self.spans]
            self._new = []

    def result(self) -> tuple[str, bool]:
        """The text with the spans replaced, and whether a replacement is glued to a word."""
        parts: list[str] = []
        position, glued = 0, False
        for start, end, replacement in self.spans:
            parts += (self.text[position:start], replacement)
            position = end
            glued = glued or (end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_-"))
        parts.append(self.text[position:])
        return "".join(parts), glued


# ---------------------------------------------------------------- rules


class _Rule(Generic[_Found]):
    """A rule in two steps: a probe at C speed that proves the rule finds nothing in most texts
    (it returns None) or says where to start, then the rule itself from there.

    ``gate``: characters of which a text must hold one for the rule to find anything (one
    ``memchr`` each, before the probe). ``lowered``: the probe reads the lower-cased text.
    `full` is the reference the shortcuts are tested against: the rule over the whole text.
    """

    gate = ""
    lowered = False

    def probe(self, target: str) -> _Found | None:
        """Where the rule could apply in ``target`` (the text, or its lower-cased copy); None: nowhere."""
        raise NotImplementedError

    def run(self, scan: _Scan, found: _Found) -> None:
        """Claim the secrets of ``scan``, from what `probe` found."""
        raise NotImplementedError

    def full(self, scan: _Scan) -> None:
        """Claim the secrets of ``scan`` without gate, probe or any other shortcut."""
        raise NotImplementedError

    def needles(self) -> list[Needle]:
        """What the compiled probe looks for: every match of the rule holds one (see `_native`)."""
        return []


class _Matches(_Rule[re.Match[str]]):
    """A rule that handles each match of one regex, which starts with ``anchor``.

    ``first`` finds the first match the probe looks for: ``regex`` itself, or ``regex`` with a
    cheap first test that every match passes (then the reference scan tests the probe's).
    """

    anchor = ""
    regex: re.Pattern[str]
    first: re.Pattern[str]
    visits = True  # visit anchors with str.find first (see `_loops`); not for a common letter

    def probe(self, target: str) -> re.Match[str] | None:
        if len(target) < 1024 or not self.visits:  # a regex scan is cheaper than one visit
            return self.first.search(target)
        return _find(target, self.anchor, self.first, 0, _loops(target))[0]

    def run(self, scan: _Scan, found: re.Match[str]) -> None:
        target = scan.low() if self.lowered else scan.text
        _each(target, self.anchor, self.regex, lambda match: self.handle(scan, match), found)

    def full(self, scan: _Scan) -> None:
        match = self.regex.search(scan.low() if self.lowered else scan.text)
        if match is not None:
            self.run(scan, match)

    def handle(self, scan: _Scan, match: re.Match[str]) -> int:
        """Claim what ``match`` found; where the next match may start."""
        raise NotImplementedError


def _loops(text: str) -> int:
    """How many anchors to visit with ``str.find`` before one regex scan is cheaper: about one a KB.

    A visit costs about what ``re`` takes to scan a KB for the anchor's first character.
    """
    return min(_FIND_LOOPS, len(text) >> 10)


def _find(
    text: str, anchor: str, regex: re.Pattern[str], position: int = 0, loops: int = 0
) -> tuple[re.Match[str] | None, int]:
    """The first match at or after ``position`` of ``regex`` (which starts with ``anchor``), and the
    visits left.

    The first ``loops`` places holding the anchor's last character are visited with ``str.find``
    (one ``memchr``: a longer needle is searched character by character) and ``regex`` tried
    where the whole anchor is; after that ``regex.search`` scans for the anchor in C.
    """
    back = len(anchor) - 1
    last = anchor[-1]
    while loops:
        found = text.find(last, position + back)
        if found < 0:
            return None, 0
        loops -= 1
        position = found - back
        if not back or text.startswith(anchor, position):
            match = regex.match(text, position)
            if match is not None:
                return match, loops
        position += 1
    return regex.search(text, position), 0


def _each(
    text: str,
    anchor: str,
    regex: re.Pattern[str],
    handle: Callable[[re.Match[str]], int],
    match: re.Match[str] | None,
    loops: int = 0,
) -> None:
    """Call ``handle`` on ``match`` and on each later match of ``regex``; it says where to go on."""
    while match is not None:
        match, loops = _find(text, anchor, regex, max(handle(match), match.start() + 1), loops)


def _escaped(text: str, i: int) -> bool:
    """Whether ``text[i]`` follows an odd number of backslashes (the ``n`` of ``\\n``)."""
    k = i
    while k and text[k - 1] == "\\":
        k -= 1
    return (i - k) % 2 == 1


def _starts_word(text: str, i: int) -> bool:
    """Whether a token may start at ``i``: not glued to a word, or right after an escape (``\\n``)."""
    before = text[i - 1] if i else " "
    return not (before.isalnum() or before == "_") or (before in "nrtbf" and _escaped(text, i - 1))


def _run(regex: re.Pattern[str], text: str, position: int = 0, stop: int | None = None) -> int:
    """Where the run that ``regex`` (a starred character class) matches from ``position`` ends."""
    match = regex.match(text, position, len(text) if stop is None else stop)
    return match.end() if match else position


def _until_cut(text: str, start: int, stop: int, newline: bool = True) -> int:
    """The end of an unclosed value: its line's end, the cut marker or ``stop``, whichever is first."""
    stop = min(stop, len(text))
    for mark in ("\n", _CUT_MARK) if newline else (_CUT_MARK,):
        found = text.find(mark, start, stop)
        stop = stop if found < 0 else found
    return stop
