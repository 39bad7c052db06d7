"""The rules: tokens with a known shape, URLs, Authorization schemes and e-mail addresses.

Each rule is a `_Rule`; `Redactor` picks them by group and anchor. Key = value is in `_keys`.
"""

from __future__ import annotations

import binascii
import re
from base64 import b64decode
from collections.abc import Sequence
from typing import NamedTuple

from tracesim._redact._native import Needle, characters, literals, run_after
from tracesim._redact._scan import (
    _CUT_MARK,
    _each,
    _escaped,
    _Matches,
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
# What every token found from an anchor has right after it: a first test, so that the anchor in
# prose ("well-known", "A few") costs one failed character class, not a lookbehind per prefix.
# (the characters of a class, how many): `(?=[A-Za-z0-9_-]{9})` after a "-".
_AHEAD = {"-": ("A-Za-z0-9_-", 9), "_": ("A-Za-z0-9_+/=", 16), "A": ("A-Za-z0-9_=-", 19)}
_WORDY = re.compile(r"[a-z]+(?:-[a-z]+)+")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}-----")


def _pem_end(text: str, start: int) -> int:
    """The end of a private key block: its END line, else the cut marker or the text's end."""
    found = text.find("-----END ", start)
    if found < 0:
        return _until_cut(text, start, len(text), newline=False)
    close = _PEM_END.match(text, found)
    return close.end() if close else found


class _Tokens(_Matches):
    """The tokens of ``specs``, found from their common ``anchor`` (see `_Token.find`)."""

    def __init__(self, anchor: str, specs: Sequence[_Token]) -> None:
        self.gate = anchor[-1]  # the text must hold the anchor's last character: one memchr
        self.anchor = anchor
        self.names = {f"t{i}": spec for i, spec in enumerate(specs)}
        # One regex per anchor. Each alternative: the prefix before the anchor (when there is one)
        # as a lookbehind, the body, then an empty group that names it; at an anchor that starts
        # no secret, each alternative fails on its first character or two.
        alternatives = "|".join(
            ("" if spec.prefix == anchor else f"(?<={spec.prefix})") + f"{spec.body}(?P<{name}>)"
            for name, spec in self.names.items()
        )
        self.regex = re.compile(f"{re.escape(anchor)}(?:{alternatives})")
        ahead = _AHEAD.get(anchor)
        self.first = (
            re.compile(f"{re.escape(anchor)}(?=[{ahead[0]}]{{{ahead[1]}}})(?:{alternatives})")
            if ahead
            else self.regex
        )
        self.visits = anchor not in ("-", "A")  # common in prose: one regex scan costs less than visits

    def needles(self) -> list[Needle]:
        """Each token's literal start (its prefix, and its body's first characters when fixed),
        stopping the scan at the anchor's last character, with the characters ``first`` wants
        after the anchor (those the literal holds already are not asked for again)."""
        ahead = _AHEAD.get(self.anchor)
        needles = []
        for spec in self.names.values():
            pattern = spec.prefix + spec.body
            run, count = (characters(ahead[0]), ahead[1]) if ahead else run_after(pattern)
            for literal in literals(pattern):
                beyond = len(literal) - spec.width  # characters of the literal after the anchor
                needles.append(
                    Needle(
                        literal,
                        trigger=spec.width - 1,
                        start=spec.width - len(self.anchor),
                        run=run,
                        run_min=max(0, count - beyond) if ahead else count,
                    )
                )
        return needles

    def run(self, scan: _Scan, found: re.Match[str]) -> None:
        text, names, back = scan.text, self.names, len(self.anchor)
        last = -1  # where this rule's previous secret ended: one glued to it starts there

        def handle(match: re.Match[str]) -> int:
            nonlocal last
            spec = names[match.lastgroup or ""]
            start, end = match.start() + back - spec.width, match.end()
            if not (_starts_word(text, start) or start == last or scan.claimed(start - 1)):
                return start + 1
            if spec.wordy and _WORDY.fullmatch(text, start + spec.width, end):
                return end
            if spec.label == "private_key":
                end = _pem_end(text, end)
            scan.add(start, end, spec.label)
            last = end
            return end

        _each(text, self.anchor, self.regex, handle, found)


# ---------------------------------------------------------------- URLs: passwords and webhooks

_URL_PARTS = {
    "url_password": r"[^\s/?#@:\"'`<>\\]*:(?P<password>[^\s/?#\"'`<>\\]+)@",
    "api_key": r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<webhook>[A-Za-z0-9/_+-]+)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/(?P<hook>[0-9]+/[A-Za-z0-9_-]+))",
}


class _Urls(_Matches):
    """Passwords in ``scheme://user:password@host``, and Slack and Discord webhooks."""

    gate = "/"
    anchor = "://"

    def __init__(self, groups: frozenset[str]) -> None:
        parts = [part for group, part in _URL_PARTS.items() if group in groups]  # one at least
        self.regex = self.first = re.compile("://(?:" + "|".join(parts) + ")")

    def needles(self) -> list[Needle]:
        return [Needle("://", 0)]

    def handle(self, scan: _Scan, match: re.Match[str]) -> int:
        name, text = match.lastgroup or "", scan.text
        if "[REDACTED" not in text[match.start() : match.start(name) + 10]:  # not our own marker
            scan.add(match.start(name), match.end(name), "password" if name == "password" else "webhook")
        return match.end()


# ---------------------------------------------------------------- Authorization schemes

# On the lower-cased text: "bearer" or "basic", then a word of 8 characters or more (or a cut one)
_SCHEME = re.compile(r"b(?:earer|asic)[ \t]+(?=[\w.~+/%=-]{8}|[\w.~+/%=-]{1,7}…)")
_SCHEME_WORD = characters("A-Za-z0-9_.~+/%=-")  # the ASCII part of [\w.~+/%=-]
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


class _Schemes(_Matches):
    """``Bearer`` and ``Basic`` credentials, found on the lower-cased text."""

    gate = "bB"
    lowered = True
    anchor = "b"
    regex = first = _SCHEME
    visits = False  # "b" is common: the regex scans

    def needles(self) -> list[Needle]:
        """``bearer`` or ``basic`` in any case, a space or tab, then what `_SCHEME` looks ahead for."""
        return [
            Needle(
                word,
                0,
                folded=True,
                skip=" \t",
                skip_min=1,
                run=_SCHEME_WORD,
                run_wide=True,
                run_min=8,
                cut=True,
            )
            for word in ("bearer", "basic")
        ]

    def handle(self, scan: _Scan, match: re.Match[str]) -> int:
        text = scan.text
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


# ---------------------------------------------------------------- e-mail addresses

# From the "@": the domain (labels, then a TLD not followed by a letter or digit). The local
# part is read backwards from the "@", at most 64 characters, so "a" * 100_000 + "@" is cheap.
_EMAIL = re.compile(r"@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.){1,10}[^\W\d_]{2,63}(?![^\W_])")
_LOCAL = re.compile(r"[\w.%+-]{0,64}")
_RETINA = re.compile(r"@[0-9]+x\.")  # icon@2x.png is a file name


class _Emails(_Matches):
    """E-mail addresses, found from their "@"."""

    gate = "@"
    anchor = "@"
    regex = first = _EMAIL

    def needles(self) -> list[Needle]:
        return [Needle("@", 0, run=characters("A-Za-z0-9"), run_wide=True, run_min=1)]  # then [^\W_]

    def handle(self, scan: _Scan, match: re.Match[str]) -> int:
        text, at = scan.text, match.start()
        start = at - _run(_LOCAL, text[max(0, at - 64) : at][::-1])
        while start < at and (text[start] == "." or (text[start] in "nrtbf" and _escaped(text, start))):
            start += 1  # a sentence's dot, or the letter of an escape like "\n" before the address
        if start < at and not _RETINA.match(text, at) and not scan.claimed(at - 1):  # not user:pw@host
            scan.add(start, match.end(), "email")
        return match.end()
