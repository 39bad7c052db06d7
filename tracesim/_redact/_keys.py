"""Key = value: the value after a name that says it is a secret (``api_key=``, ``"password": ``).

Key names are found from their separator. Read forwards, a name starts with a common letter
(``k``, ``p``, ``c``, ``g``): a scan for it tries a match at most words of a text. So the
probe reads the lower-cased text backwards from each ``:``, ``=`` or ``>`` (after one
``memchr`` says there is one), where a name is the word just before it; in JSON most of
those follow keys that name no secret, and cost one failed match each. Each name found is
then matched forwards, in the order the reference scan (`_KeyValues.full`) would meet it.
"""

from __future__ import annotations

import re
import sys

from tracesim._redact._scan import (
    _CUT_MARK,
    _FIND_LOOPS,
    _MAX_QUOTED,
    _MIN_VALUE,
    _each,
    _find,
    _lower,
    _Rule,
    _run,
    _Scan,
    _until_cut,
)

# Characters before a key name's anchor that `_key_value` reads: the rest of the name (7 at
# most), up to 48 of its prefix (`client_`), and 10 for our own marker before it.
_BEHIND = 80

# After a key name: its closing quote (escaped, in escaped JSON), the `]` of a subscript, then
# `:`, `=`, `:=`, `=>` or `>` (an XML tag), then the value's opening quote.
_SEP = r"(?:\\*[\"'])?\]?[ \t]*(?::=|=>|[:=>])"
_HEAD = re.compile(r"(?:\\*[\"'])?\]?[ \t]*(?P<sep>:=|=>|[:=>])[ \t]*(?P<open>\\*[\"'`])?")
_KEYS = {  # anchor -> regex for the word ending a key name, on the lower-cased text
    "k": rf"k(?:(?<=tok)en|ey)(?={_SEP})",
    "p": rf"p(?:ass(?:word|wd|phrase|code)?|wd)(?={_SEP})",
    "c": rf"c(?<=sec)ret(?={_SEP})",
    "g": rf"g(?<=sig)(?:nature)?(?={_SEP})",
    "z": rf"z(?<=authoriz)ation(?={_SEP})",
}
_WORDS = {  # what a regex matched from its anchor -> (the word, its characters before the anchor)
    "ken": ("token", 2),
    "cret": ("secret", 2),
    "g": ("sig", 2),
    "gnature": ("signature", 2),
    "zation": ("authorization", 7),
}
KEY_WORDS = (  # `<word>_key` names a secret; `primary_key`, `sort_key`, `public_key` do not
    "api", "secret", "private", "access", "account", "signing", "encryption", "master", "auth",
    "subscription", "license", "client",
)  # fmt: skip
_IDENT = re.compile(r"[a-z0-9_.\-]*")
_BARE_VALUE = re.compile(r"[^\s\"'`\\,;&<>(){}\[\]…]*")  # "…" starts the cut marker
_AUTH_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*[ \t]+(?=[^\s\"'`\\])")
_NOT_SECRETS = frozenset({"null", "none", "true", "false", "undefined", "nil", "redacted", "required"})
_COUNTS = frozenset({"token", "api_key", "signature"})  # a number after these is a count or an id


def _key_label(prefix: str, word: str) -> str | None:
    """The label for the value of key ``prefix + word``, or None if it names no secret."""
    joined = bool(prefix) and prefix[-1] in "_-."
    if word == "key":
        bare = prefix.replace("_", "").replace("-", "").replace(".", "")
        if not bare.endswith(KEY_WORDS):
            return None
        return "private_key" if bare.endswith("private") else "secret" if "secret" in bare else "api_key"
    if word == "pass":  # `db_pass`, not `bypass`
        return "password" if joined or not prefix else None
    if word == "pwd":  # `MYSQL_PWD`, not the shell's `PWD`
        return "password" if joined else None
    if word == "sig":
        return "signature" if joined or not prefix else None
    return {"token": "token", "secret": "secret", "authorization": "credentials"}.get(
        word, "signature" if word == "signature" else "password"
    )


def _quoted_end(text: str, start: int, opening: str) -> int | None:
    """Where a value opened by ``opening`` (a quote after 0, 1, 3… backslashes) closes, or None."""
    backslashes, quote = len(opening) - 1, opening[-1]
    stop = min(len(text), start + _MAX_QUOTED)
    found = text.find(quote, start, stop)
    while found >= 0:
        k = found
        while k > start and text[k - 1] == "\\":
            k -= 1
        if found - k == backslashes if backslashes else (found - k) % 2 == 0:
            return found - backslashes
        found = text.find(quote, found + 1, stop)
    return None


def _key_value(scan: _Scan, match: re.Match[str], low: str, offset: int = 0) -> int:
    """Claim the value after the key name ``match`` found in ``low``: the lower-cased text from
    ``offset`` on (at least `_BEHIND` characters before the match); where to go on."""
    text, end = scan.text, match.end() + offset
    word, back = _WORDS.get(match.group(), (match.group(), 0))
    start = match.start() + offset - back
    key_start = start - _run(_IDENT, low[max(0, start - 48) - offset : start - offset][::-1])
    label = _key_label(low[key_start - offset : start - offset], word)
    head = _HEAD.match(text, end)
    if (
        label is None
        or head is None
        or (key_start >= 10 and low.startswith("[redacted:", key_start - 10 - offset))
    ):
        return end  # no secret's name, or the name in one of our own markers
    separator = head.group("sep")
    if (separator == ">" and not text.startswith("<", key_start - 1)) or (
        label == "signature" and separator != "="
    ):
        return end  # `>` only after an XML tag's name; a signature only in a query string
    value_start, shortest = head.end(), _MIN_VALUE
    if label == "credentials":  # Authorization: <scheme> <credentials>
        scheme = _AUTH_SCHEME.match(text, value_start)
        if scheme:
            value_start, shortest = scheme.end(), 1
    opening = head.group("open")
    closed = _quoted_end(text, value_start, opening) if opening else _run(_BARE_VALUE, text, value_start)
    value_end = _until_cut(text, value_start, value_start + _MAX_QUOTED) if closed is None else closed
    value = text[value_start:value_end]
    if closed is not None and not text.startswith(_CUT_MARK, value_end):  # not cut: is it a secret?
        if len(value) < shortest or value.startswith("[REDACTED") or value.lower() in _NOT_SECRETS:
            return end
        if value.isdigit() and label in _COUNTS:
            return end
    return value_end if value and scan.add(value_start, value_end, label) else end


_BACKWARDS = {  # anchor -> the names its regex finds, spelt backwards -> where the anchor is in them
    "k": {"nekot": 2, "yek": 0},
    "p": {"drowssap": 0, "dwssap": 0, "esarhpssap": 0, "edocssap": 0, "ssap": 0, "dwp": 0},
    "c": {"terces": 2},
    "g": {"erutangis": 2, "gis": 2},
    "z": {"noitazirohtua": 7},
}


ANCHORS = "kpcgz"  # the anchors of `_KEYS`, numbered for the compiled probe
# Between a key name and its separator, read backwards: spaces, tabs, a `]`, quotes, backslashes
SKIP_BACK = " \t]\"'\\"


class _KeyValues(_Rule[dict[str, list[int]]]):
    """The value after a key name, for the names whose anchors are in ``anchors`` (see `_KEYS`)."""

    gate = ":=>"
    lowered = True

    def __init__(self, anchors: str) -> None:
        self.regexes = [(anchor, re.compile(_KEYS[anchor])) for anchor in anchors]
        self.names = {name: (anchor, at) for anchor in anchors for name, at in _BACKWARDS[anchor].items()}
        names = "|".join(self.names)
        # `_SEP` backwards from its last character: spaces, a `]`, a quote, backslashes, read as one
        # run of those characters that never gives any back (a superset, each name found is then
        # matched forwards); optional parts one by one cost `re` three times as much per separator.
        skip = re.escape(SKIP_BACK)
        # `*+` (possessive) is Python 3.11's; before it, a lookahead captures the run and a
        # backreference consumes it, which gives nothing back either (the same matches).
        run = f"[{skip}]*+" if sys.version_info >= (3, 11) else f"(?=(?P<run>[{skip}]*))(?P=run)"
        self.locators = [
            (separator, re.compile(rf"{separator}{run}(?P<name>{names})")) for separator in ":=>"
        ]

    def probe(self, target: str) -> dict[str, list[int]] | None:
        """Where each anchor of a key name is, by anchor; None when there is no key name."""
        found: dict[str, list[int]] = {}
        backwards, size = "", len(target)
        query = "=" in target  # a signature only in a query string
        for separator, locator in self.locators:
            if separator in target:
                backwards = backwards or target[::-1]
                for match in locator.finditer(backwards):
                    anchor, at = self.names[match.group("name")]
                    if anchor != "g" or query:
                        found.setdefault(anchor, []).append(size - match.end() + at)
        return found or None

    def spelt_backwards(self, anchors: str) -> tuple[tuple[str, int, int, bool], ...]:
        """The names for the compiled probe: (name backwards, its anchor's index in ``anchors``, at,
        whether one of `KEY_WORDS` must end the identifier before it, as `_key_label` asks of ``key``)."""
        return tuple(
            (name, anchors.index(anchor), at, name == "yek") for name, (anchor, at) in self.names.items()
        )

    def located(self, scan: _Scan, keys: list[tuple[int, int, int]], anchors: str) -> None:
        """`run`, from the key names the compiled probe found: (anchor number, position, separator).

        The compiled probe knows where each name's separator is, so only the few characters from
        `_BEHIND` before the name to the separator are lower-cased, not the whole text.
        """
        text = scan.text
        found: dict[str, dict[int, int]] = {}
        for number, position, separator in keys:
            found.setdefault(anchors[number], {})[position] = separator
        if "g" in found and "=" not in text:  # a signature only in a query string
            del found["g"]
        for anchor, regex in self.regexes:  # as `run` does
            places = found.get(anchor)
            if places is None:
                continue
            after = 0
            for position in sorted(places):
                if position >= after:
                    offset = max(0, position - _BEHIND)
                    low = _lower(text[offset : places[position] + 2])  # the separator's `:=` or `=>`
                    match = regex.match(low, position - offset)
                    if match is not None:
                        after = max(_key_value(scan, match, low, offset), position + 1)
            scan.commit()

    def run(self, scan: _Scan, found: dict[str, list[int]]) -> None:
        low = scan.low()
        for anchor, regex in self.regexes:  # anchor by anchor, each from the left: as `full` does
            after = 0
            for position in sorted(set(found.get(anchor, ()))):
                if position >= after:
                    match = regex.match(low, position)
                    if match is not None:
                        after = max(_key_value(scan, match, low), position + 1)
            scan.commit()

    def full(self, scan: _Scan) -> None:
        low, query = scan.low(), "=" in scan.text
        for anchor, regex in self.regexes:
            if anchor != "g" or query:
                loops = _FIND_LOOPS if anchor == "z" else 0
                match, loops = _find(low, anchor, regex, 0, loops)
                _each(low, anchor, regex, lambda match: _key_value(scan, match, low), match, loops)
                scan.commit()
