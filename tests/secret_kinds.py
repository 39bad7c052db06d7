"""One secret of each kind tracesim promises to redact, shared by the tests of its outputs.

Each kind maps to ``(secret, fragment)``: the fragment is the secret's distinctive body, which
must appear nowhere in what tracesim writes, escaped or not. `SECRETS` is the table the span
tests plant (``tests/redact``); `KINDS` takes its key, bearer, e-mail and URL password and adds a
PEM block. (Not named ``secrets``: the tests' folder is on ``sys.path`` and would hide the standard
library's module.)

Example:
    >>> leaked("mail [REDACTED:email]"), leaked('{"to": "marie.curie@sorbonne.fr"}')
    ([], ['email'])
"""

from __future__ import annotations

__all__ = ["KINDS", "PEM", "SECRETS", "leaked"]

# One secret of each kind the built-in patterns promise to catch, with a fragment that must
# never appear anywhere in the output (the secret's distinctive body).
SECRETS: dict[str, tuple[str, str]] = {
    "email": ("marie.curie@sorbonne.fr", "marie.curie@sorbonne"),
    "openai": ("sk-proj-Abc123Def456Ghi789Jkl012Mno345", "Abc123Def456Ghi789"),
    "github_pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
        "abcdefghijklmnopqrstuvwxyz",
    ),
    "aws_temporary": ("ASIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    "aws_secret": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    "url_password": ("postgres://admin:hunter2pass@localhost/db", "hunter2pass"),
    "escaped_json": ('{"arguments": "{\\"api_key\\": \\"abc123secretvalue\\"}"}', "abc123secretvalue"),
    "bearer": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
}

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+XQ0qfT8wLVkGwvD3f\n"
    "Zq9PmTbXwA2vL0s8YkQ1f2JcR4mUo6hNbVtI7eWyGzKx\n-----END RSA PRIVATE KEY-----"
)

KINDS: dict[str, tuple[str, str]] = {
    "openai": SECRETS["openai"],
    "bearer": SECRETS["bearer"],
    "email": SECRETS["email"],
    "url_password": SECRETS["url_password"],
    "pem": (PEM, "MIIEowIBAAKCAQEAq7BF"),
}


def leaked(text: str) -> list[str]:
    """The kinds whose fragment is in ``text``, searched raw and with JSON's escapes undone."""
    unescaped = text.replace("\\\\", "\\").replace('\\"', '"').replace("\\/", "/").replace("\\n", "\n")
    return [kind for kind, (_, fragment) in KINDS.items() if fragment in text or fragment in unescaped]
