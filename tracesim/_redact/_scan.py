"""One text being scanned: the spans rules claim, and small helpers the rules share."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

MARGIN = 256  # no common secret is longer: a cut backs off this far to keep a secret whole
_CUT_MARK = "…[truncated"  # what tracesim._capture.cut appends: a value touching it was cut
_FIND_LOOPS = 8  # anchors visited with str.find before one regex scan takes over
_MAX_QUOTED = 4096  # a quoted value not closed within this many characters is treated as cut
_MIN_VALUE = 6  # shorter values after a key name are left alone ("token": "abc", "pwd=1234")


def _mark(label: str) -> str:
    return f"[REDACTED:{label}]"


# ---------------------------------------------------------------- one text being scanned


class _Scan:
    """A text, its lower-cased copy (made once, when a rule needs it) and the spans to replace.

    Spans stay sorted and disjoint: a rule claims only what earlier rules left, so a secret
    found twice is replaced once, and one glued to another is still replaced.
    """

    __slots__ = ("_low", "_new", "spans", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None
        self.spans: list[tuple[int, int, str]] = []
        self.starts: list[int] = []
        self._new: list[tuple[int, int, str]] = []

    def low(self) -> str:
        if self._low is None:
            low = self.text.lower()
            if len(low) != len(self.text):  # only "İ" lowers to two characters; keep positions
                low = self.text.replace("\u0130", "I").lower()
            self._low = low
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


def _each(
    text: str,
    anchor: str,
    regex: re.Pattern[str],
    handle: Callable[[re.Match[str]], int],
    loops: int = _FIND_LOOPS,
) -> None:
    """Call ``handle`` on each match of ``regex`` (which starts with ``anchor``); it says where to go on.

    The first ``loops`` places holding the anchor's last character are visited with
    ``str.find`` (one ``memchr``: a longer needle is searched character by character) and
    ``regex`` tried where the whole anchor is; after that (at once, for a letter)
    ``regex.search`` scans from one match to the next.
    """
    back = len(anchor) - 1
    last = anchor[-1]
    position = text.find(last, back) - back if back else text.find(anchor)
    while position >= 0:
        if loops:
            loops -= 1
            match = regex.match(text, position) if not back or text.startswith(anchor, position) else None
            if match is None:
                found = text.find(last, position + back + 1)
                position = found - back if found >= 0 else -1
                continue
        else:
            match = regex.search(text, position)
            if match is None:
                return
        found = text.find(last, max(handle(match), match.start() + 1) + back)
        position = found - back if found >= 0 else -1


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
