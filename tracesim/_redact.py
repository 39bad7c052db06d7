"""The redaction engine: find secrets in text and replace them, cheaply enough for every string.

Every rule is found through an *anchor*, a character all of its matches contain: ``-`` in
``sk-…``, ``_`` in ``ghp_…``, ``@`` in an e-mail address, ``k`` in ``token`` and ``api_key``.
A text without the anchor costs the rule one ``memchr``. Otherwise a rare anchor is visited
with ``str.find`` and the rule's regex tried there; a common one (a letter) is left to one
regex that *starts* with it, which ``re`` scans for without trying a match at every position.
Key names are matched on one lower-cased copy of the text, never with ``(?i)`` over a value.
No pattern nests unbounded quantifiers, so no input makes a rule backtrack more than a bounded
amount per anchor.

Rules report spans of the original text, most specific first (a private key block before
anything inside it, a vendor key before the generic ``key=value`` rule); a rule claims only
what earlier ones left, and all replacements are joined once. A replacement keeps the key and
says what was removed. Redacting twice changes nothing more.

Example:
    >>> Redactor().redact('{"password": "hunter2!", "total_tokens": 512}', "input.value")
    '{"password": "[REDACTED:password]", "total_tokens": 512}'
"""

from __future__ import annotations

import binascii
import re
from base64 import b64decode
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tracesim._guard import internal_error, warn_once

__all__ = ["PATTERN_GROUPS", "Redactor", "safe_cut"]

PATTERN_GROUPS: tuple[str, ...] = ("email", "api_key", "bearer", "url_password", "private_key")
"""Names accepted by the ``redact_patterns`` setting; all of them are on by default."""

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

    The first ``loops`` anchors are visited with ``str.find`` (``memchr``) and ``regex`` tried
    there; after that (at once, for a letter) ``regex.search`` scans from one match to the next.
    """
    position = text.find(anchor)
    while position >= 0:
        if loops:
            loops -= 1
            match = regex.match(text, position)
            if match is None:
                position = text.find(anchor, position + 1)
                continue
        else:
            match = regex.search(text, position)
            if match is None:
                return
        position = text.find(anchor, max(handle(match), match.start() + 1))


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


# ---------------------------------------------------------------- tokens with a known shape


class _Token(NamedTuple):
    """A secret known by its shape: a prefix at the start of a word, then a body."""

    group: str
    prefix: str  # a regex of fixed width ``width``
    width: int
    body: str
    label: str = "api_key"
    wordy: bool = False  # a body of words joined by hyphens is prose: `sk-learn-compatible-models`
    anchor: str = ""  # the literal end of the prefix to look for; its last character by default

    @property
    def find(self) -> str:
        return self.anchor or self.prefix[-1]


_AWS = "(?:KIA|SIA|IDA|ROA|IPA|NPA|NVA|GPA|CCA|PKA|SCA|BIA|3T[A-Z0-9])"  # AKIA, ASIA (temporary)...
_URL64 = "[A-Za-z0-9_-]"
_TOKENS = (
    # A PEM block comes first: nothing inside it is matched on its own.
    _Token("private_key", "-", 1, "----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----", "private_key"),
    _Token("api_key", "sk-", 3, "[A-Za-z0-9_-]{16,}", wordy=True),  # OpenAI, Anthropic, DeepSeek...
    _Token("api_key", "gl(?:pat|ptt)-", 6, "[A-Za-z0-9_-]{20,}"),  # GitLab
    _Token("api_key", "gl(?:dt|rt|ft)-", 5, "[A-Za-z0-9_-]{20,}"),
    _Token("api_key", "xox[abposr]-", 5, "[A-Za-z0-9-]{10,}"),  # Slack
    _Token("api_key", "xapp-", 5, "[A-Za-z0-9-]{20,}"),
    _Token("api_key", "xai-", 4, "[A-Za-z0-9]{32,}"),  # xAI
    _Token("api_key", "pplx-", 5, "[A-Za-z0-9]{32,}"),  # Perplexity
    _Token("api_key", "pypi-", 5, "[A-Za-z0-9_-]{50,}"),
    _Token("api_key", "GOCSPX-", 7, "[A-Za-z0-9_-]{20,}"),  # Google OAuth client secret
    _Token("api_key", "gh[pousr]_", 4, "[A-Za-z0-9]{30,}"),  # GitHub
    _Token("api_key", "github_pat_", 11, "[A-Za-z0-9_]{22,}"),
    _Token("api_key", "[sr]k_(?:live|test)_", 8, "[A-Za-z0-9]{16,}"),  # Stripe
    _Token("api_key", "whsec_", 6, "[A-Za-z0-9+/=]{20,}"),
    _Token("api_key", "hf_", 3, "[A-Za-z0-9]{30,}"),  # Hugging Face
    _Token("api_key", "npm_", 4, "[A-Za-z0-9]{36,}"),
    _Token("api_key", "gsk_", 4, "[A-Za-z0-9]{40,}"),  # Groq
    _Token("api_key", "r8_", 3, "[A-Za-z0-9]{30,}"),  # Replicate
    _Token("api_key", "do[opr]_v1_", 7, "[a-f0-9]{64}"),  # DigitalOcean
    _Token("api_key", "shp(?:at|ca|pa|ss)_", 6, "[a-fA-F0-9]{32}"),  # Shopify
    _Token("api_key", "A", 1, _AWS + "[A-Z0-9]{16}(?![A-Za-z0-9])"),  # AWS access key ids
    _Token("api_key", "A", 1, "Iza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),  # Google
    _Token("api_key", "A", 1, "TATT[A-Za-z0-9_=-]{20,}"),  # Atlassian
    _Token("api_key", "SG", 2, rf"\.{_URL64}{{22}}\.{_URL64}{{43}}", anchor="SG"),  # SendGrid
    # a JSON web token, header.payload[.signature...]
    _Token(
        "api_key", "eyJ", 3, rf"{_URL64}{{8,}}\.{_URL64}{{8,}}(?:\.{_URL64}+){{0,3}}", "token", anchor="eyJ"
    ),
)
_WORDY = re.compile(r"[a-z]+(?:-[a-z]+)+")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}-----")


def _pem_end(text: str, start: int) -> int:
    """The end of a private key block: its END line, else the cut marker or the text's end."""
    found = text.find("-----END ", start)
    if found < 0:
        return _until_cut(text, start, len(text), newline=False)
    close = _PEM_END.match(text, found)
    return close.end() if close else found


def _tokens(anchor: str, specs: Sequence[_Token]) -> Callable[[_Scan], None]:
    names = {f"t{i}": spec for i, spec in enumerate(specs)}
    # One regex per anchor. Each alternative: the prefix before the anchor (when there is one)
    # as a lookbehind, the body, then an empty group that names it; at an anchor that starts
    # no secret, each alternative fails on its first character or two.
    alternatives = "|".join(
        ("" if spec.prefix == anchor else f"(?<={spec.prefix})") + f"{spec.body}(?P<{name}>)"
        for name, spec in names.items()
    )
    regex = re.compile(f"{re.escape(anchor)}(?:{alternatives})")

    def detect(scan: _Scan) -> None:
        text = scan.text
        last = [-1]  # where this rule's previous secret ended: one glued to it starts there

        def handle(match: re.Match[str]) -> int:
            spec = names[match.lastgroup or ""]
            start, end = match.start() + len(anchor) - spec.width, match.end()
            if not (_starts_word(text, start) or start == last[0] or scan.claimed(start - 1)):
                return start + 1
            if spec.wordy and _WORDY.fullmatch(text, start + spec.width, end):
                return end
            if spec.label == "private_key":
                end = _pem_end(text, end)
            scan.add(start, end, spec.label)
            last[0] = end
            return end

        _each(text, anchor, regex, handle)

    return detect


# ---------------------------------------------------------------- URLs: passwords and webhooks

_URL_PARTS = {
    "url_password": r"[^\s/?#@:\"'`<>\\]*:(?P<password>[^\s/?#\"'`<>\\]+)@",
    "api_key": r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<webhook>[A-Za-z0-9/_+-]+)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/(?P<hook>[0-9]+/[A-Za-z0-9_-]+))",
}


def _urls(groups: frozenset[str]) -> Callable[[_Scan], None] | None:
    parts = [part for group, part in _URL_PARTS.items() if group in groups]
    regex = re.compile("://(?:" + "|".join(parts) + ")")

    def detect(scan: _Scan) -> None:
        def handle(match: re.Match[str]) -> int:
            name, text = match.lastgroup or "", scan.text
            if "[REDACTED" not in text[match.start() : match.start(name) + 10]:  # not our own marker
                scan.add(match.start(name), match.end(name), "password" if name == "password" else "webhook")
            return match.end()

        if "/" in scan.text:
            _each(scan.text, "://", regex, handle)

    return detect if parts else None


# ---------------------------------------------------------------- Authorization schemes

# On the lower-cased text: "bearer" or "basic", then a word of 8 characters or more (or a cut one)
_SCHEME = re.compile(r"b(?:earer|asic)[ \t]+(?=[\w.~+/%=-]{8}|[\w.~+/%=-]{1,7}…)")
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9_.~+/%=-]+")  # RFC 6750's b64token, and % for URL-encoded
_BASIC_TOKEN = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_DIGIT = re.compile(r"[0-9]")


def _opaque(token: str) -> bool:
    """Whether a word after ``Bearer`` looks like a token rather than English."""
    if len(token) >= 8 and _DIGIT.search(token):
        return True
    return len(token) >= 20 and token.lower() != token != token.upper()


def _basic_credentials(token: str) -> bool:
    """Whether ``token`` is base64 of ``user:password``."""
    try:
        decoded = b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _schemes(scan: _Scan) -> None:
    text = scan.text

    def handle(match: re.Match[str]) -> int:
        start, end = match.span()
        if not _starts_word(text, start):
            return end
        basic = text[start + 1] in "aA"
        found = (_BASIC_TOKEN if basic else _BEARER_TOKEN).match(text, end)
        if found is None:
            return end
        token, stop = found.group(), found.end()
        if text.startswith(_CUT_MARK, stop) or (_basic_credentials(token) if basic else _opaque(token)):
            scan.add(end, stop, "credentials" if basic else "token")
        return stop

    _each(scan.low(), "b", _SCHEME, handle, loops=0)  # "b" is common: the regex scans


# ---------------------------------------------------------------- key = value

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
_KEY_WORDS = (  # `<word>_key` names a secret; `primary_key`, `sort_key`, `public_key` do not
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
        if not bare.endswith(_KEY_WORDS):
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


def _key_value(scan: _Scan, match: re.Match[str]) -> int:
    text, low, end = scan.text, scan.low(), match.end()
    word, back = _WORDS.get(match.group(), (match.group(), 0))
    start = match.start() - back
    key_start = start - _run(_IDENT, low[max(0, start - 48) : start][::-1])
    label = _key_label(low[key_start:start], word)
    head = _HEAD.match(text, end)
    if label is None or head is None or low.startswith("[redacted:", key_start - 10):
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


def _key_values(anchors: str) -> Callable[[_Scan], None]:
    regexes = [(anchor, re.compile(_KEYS[anchor])) for anchor in anchors]

    def detect(scan: _Scan) -> None:
        low, query = scan.low(), "=" in scan.text
        for anchor, regex in regexes:
            if anchor != "g" or query:  # a signature only in a query string
                loops = _FIND_LOOPS if anchor == "z" else 0  # letters other than "z" are common
                _each(low, anchor, regex, lambda match: _key_value(scan, match), loops)
                scan.commit()

    return detect


# ---------------------------------------------------------------- e-mail addresses

# From the "@": the domain (labels, then a TLD not followed by a letter or digit). The local
# part is read backwards from the "@", at most 64 characters, so "a" * 100_000 + "@" is cheap.
_EMAIL = re.compile(r"@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.){1,10}[^\W\d_]{2,63}(?![^\W_])")
_LOCAL = re.compile(r"[\w.%+-]{0,64}")
_RETINA = re.compile(r"@[0-9]+x\.")  # icon@2x.png is a file name


def _emails(scan: _Scan) -> None:
    text = scan.text

    def handle(match: re.Match[str]) -> int:
        at = match.start()
        start = at - _run(_LOCAL, text[max(0, at - 64) : at][::-1])
        while start < at and (text[start] == "." or (text[start] in "nrtbf" and _escaped(text, start))):
            start += 1  # a sentence's dot, or the letter of an escape like "\n" before the address
        if start < at and not _RETINA.match(text, at) and not scan.claimed(at - 1):  # not user:pw@host
            scan.add(start, match.end(), "email")
        return match.end()

    _each(text, "@", _EMAIL, handle)


# ---------------------------------------------------------------- the public face


class Redactor:
    """Replace secrets in text with ``[REDACTED:<what>]``, then run the user's hook. Never raises.

    Args:
        patterns: Built-in groups to apply (see `PATTERN_GROUPS`): ``email``; ``api_key``
            (vendor keys and tokens by their shape, JWTs, Slack and Discord webhooks, and the
            value after a key name: ``api_key=``, ``"password": ``, ``client_secret``,
            ``x-api-key:``, ``aws_secret_access_key``, in escaped JSON too); ``bearer``
            (``Bearer`` and ``Basic`` credentials, ``Authorization`` headers);
            ``url_password`` (``scheme://user:password@host``); ``private_key`` (PEM blocks).
        hook: ``(text, attribute) -> text``, called with the already redacted text. If it raises
            or returns a non-string, the value is withheld and a warning is logged once.

    Example:
        >>> redactor = Redactor()
        >>> redactor.redact("mail marie@curie.org, key sk-proj-Abc123Def456Ghi789", "input.value")
        'mail [REDACTED:email], key [REDACTED:api_key]'
        >>> Redactor(["email"], hook=lambda text, attribute: text.upper()).redact("a@b.io hi", "x")
        '[REDACTED:EMAIL] HI'
        >>> Redactor(()).active
        False
    """

    def __init__(
        self, patterns: Sequence[str] = PATTERN_GROUPS, hook: Callable[[str, str], str] | None = None
    ) -> None:
        names = (patterns,) if isinstance(patterns, str) else tuple(patterns)
        unknown = sorted(set(names) - set(PATTERN_GROUPS))
        if unknown:
            raise ValueError(f"unknown redaction patterns {unknown}; expected some of {PATTERN_GROUPS}")
        groups = frozenset(names)
        # (characters of which the text must hold one, rule), most specific rule first
        rules: list[tuple[str, Callable[[_Scan], None]]] = []
        for anchor in ("-", "_", "A", "eyJ", "SG"):
            specs = [spec for spec in _TOKENS if spec.find == anchor and spec.group in groups]
            if specs:  # the text must hold the anchor's last character: one memchr
                rules.append((anchor[-1], _tokens(anchor, specs)))
        urls = _urls(groups)
        if urls:
            rules.append((":", urls))
        if "bearer" in groups:
            rules.append(("bB", _schemes))
        anchors = ("kpcg" if "api_key" in groups else "") + ("z" if "bearer" in groups else "")
        if anchors:
            rules.append((":=>", _key_values(anchors)))
        if "email" in groups:
            rules.append(("@", _emails))
        self._rules = tuple(rules)
        self._hook = hook

    @property
    def active(self) -> bool:
        """False when there is no pattern and no hook: callers may skip the pass."""
        return bool(self._rules) or self._hook is not None

    def _scan(self, text: str) -> _Scan | None:
        scan = None
        for characters, detect in self._rules:
            for character in characters:  # a plain loop: a generator here costs more than the test
                if character in text:
                    if scan is None:
                        scan = _Scan(text)
                    detect(scan)
                    scan.commit()
                    break
        return scan

    def redact(self, text: str, attribute: str) -> str:
        """``text`` with every secret replaced, then passed through the hook (with ``attribute``)."""
        if self._rules:
            try:
                for _ in range(8):  # again if a secret was glued after one: it now starts a word
                    scan = self._scan(text)
                    if scan is None or not scan.spans:
                        break
                    text, glued = scan.result()
                    if not glued:
                        break
            except Exception:  # a bug of ours: never let the value out unchecked
                internal_error("redaction")
                return "[REDACTED: redaction failed]"
        if self._hook is None:
            return text
        try:
            result: object = self._hook(text, attribute)  # user code: do not trust its annotation
        except Exception:
            warn_once("redact", "tracesim: the redact hook raised; the value was withheld")
            return "[REDACTED: redact hook failed]"
        if not isinstance(result, str):
            warn_once("redact-type", "tracesim: the redact hook returned a non-string; value withheld")
            return "[REDACTED: redact hook returned a non-string]"
        return result


# ---------------------------------------------------------------- cutting without leaking

_STRONG = r"\s\"'`,;&|()\[\]{}<>\\"  # separators: no secret spans one of these...
_TOKEN_RUN = re.compile(rf"[^{_STRONG}]*")
_PIECE_RUN = re.compile(rf"[^{_STRONG}=:/?#!]*")  # ...and inside a long token, pieces end here
_ALL = Redactor()


def safe_cut(text: str, limit: int) -> int:
    """Where to cut ``text`` to keep at most ``limit`` characters without leaving part of a secret.

    A token (a run between separators: white space, quotes, brackets, ``,;&|\\``) that straddles
    the cut and is at most `MARGIN` (256) characters long could be a secret: it is dropped
    whole, so no prefix of one is left (``sk-ss…[truncated]``, ``marie.curie@sorb…``). A longer
    token (a blob, a long URL) is no single secret and keeps most of the limit: it is cut after
    its last ``= : / ? # !`` within the margin, else ``min(MARGIN, limit // 2)`` short of the
    limit, which leaves room for the marker. Finally, if a built-in pattern matches across the
    cut (a quoted password with spaces, a JWT, a key inside a long URL), the cut moves back to
    where that secret starts.

    Example:
        >>> text = "key sk-proj-Abc123Def456Ghi789Jkl012 and more"
        >>> text[: safe_cut(text, 20)]
        'key '
        >>> safe_cut("x" * 5_000_000, 32 * 1024)
        32512
    """
    if len(text) <= limit:
        return len(text)
    if limit <= 0:
        return 0
    cut = limit
    if _TOKEN_RUN.fullmatch(text, limit, limit + 1):  # the cut falls inside a token
        back = _run(_TOKEN_RUN, text[max(0, limit - MARGIN - 1) : limit][::-1])
        if back + _run(_TOKEN_RUN, text, limit, limit + MARGIN + 1) - limit <= MARGIN:
            cut = limit - back  # short enough to be one secret: dropped whole
        else:
            low = max(limit - back, limit - min(MARGIN, limit // 2))
            cut = limit - _run(_PIECE_RUN, text[low:limit][::-1])
    window = max(0, cut - MARGIN)
    try:
        scan = _ALL._scan(text[window : cut + MARGIN])
    except Exception:  # a bug of ours: cut where no secret of the margin's size can straddle
        internal_error("redaction")
        return window
    for start, end, _ in scan.spans if scan else ():
        if window + start < cut < window + end:
            return window + start
    return cut
