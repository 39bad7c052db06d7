"""One secret of each kind tracesim promises to redact, shared by the tests of its outputs.

Each kind maps to ``(secret, fragment)``: the fragment is the secret's distinctive body, which
must appear nowhere in what tracesim writes, escaped or not. The key, bearer, e-mail and URL
password are the ones the span tests plant (`test_redaction_export.SECRETS`); a PEM block is
added. (Not named ``secrets``: the tests' folder is on ``sys.path`` and would hide the standard
library's module.)

Example:
    >>> leaked("mail [REDACTED:email]"), leaked('{"to": "marie.curie@sorbonne.fr"}')
    ([], ['email'])
"""

from __future__ import annotations

from test_redaction_export import SECRETS as _SPAN_SECRETS

__all__ = ["KINDS", "PEM", "leaked"]

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+XQ0qfT8wLVkGwvD3f\n"
    "Zq9PmTbXwA2vL0s8YkQ1f2JcR4mUo6hNbVtI7eWyGzKx\n-----END RSA PRIVATE KEY-----"
)

KINDS: dict[str, tuple[str, str]] = {
    "openai": _SPAN_SECRETS["openai"],
    "bearer": _SPAN_SECRETS["bearer"],
    "email": _SPAN_SECRETS["email"],
    "url_password": _SPAN_SECRETS["url_password"],
    "pem": (PEM, "MIIEowIBAAKCAQEAq7BF"),
}


def leaked(text: str) -> list[str]:
    """The kinds whose fragment is in ``text``, searched raw and with JSON's escapes undone."""
    unescaped = text.replace("\\\\", "\\").replace('\\"', '"').replace("\\/", "/").replace("\\n", "\n")
    return [kind for kind, (_, fragment) in KINDS.items() if fragment in text or fragment in unescaped]
