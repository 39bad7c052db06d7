"""The rules: tokens with a known shape, URLs, Authorization schemes, key = value, e-mail addresses.

Each rule is a function of a `_Scan`; `Redactor` picks them by group and anchor.
"""

from __future__ import annotations

import binascii
import re
from base64 import b64decode
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tracesim._redact._scan import (
    _CUT_MARK,
    _FIND_LOOPS,
    _MAX_QUOTED,
    _MIN_VALUE,
    _each,
    _escaped,
    _run,
    _Scan,
    _starts_word,
    _until_cut,
)

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
