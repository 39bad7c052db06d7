"""The redaction engine: every secret kind in every context, no false alarms, the hook, safe cuts."""

from __future__ import annotations

import copy
import doctest
import json
import pickle
import re
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracesim._redact
from tracesim import _internal_errors
from tracesim._capture import cut
from tracesim._redact import MARGIN, PATTERN_GROUPS, Redactor, safe_cut
from tracesim._redact._keys import _BACKWARDS, _KEYS, ANCHORS, _key_label, _KeyValues
from tracesim._redact._native import load
from tracesim._redact._scan import _lower

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]
REDACTOR = Redactor()
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+XQ0qfT8wLVkGwvD3f\n"
    "Zq9PmTbXwA2vL0s8YkQ1f2JcR4mUo6hNbVtI7eWyGzKx\n-----END RSA PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ik1hcmllIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r"

# (kind, text holding a secret, a fragment of it that must not survive)
SECRETS = [
    ("email", "marie.curie@sorbonne.fr", "marie.curie"),
    ("email_plus", "m.curie+trace@physics.univ-paris.fr", "m.curie+trace"),
    ("bearer", "Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456"),
    ("bearer_lower", "authorization: bearer 0a1b2c3d4e5f6a7b8c9d", "0a1b2c3d4e5f"),
    ("bearer_jwt", f"Authorization: Bearer {JWT}", "eyJzdWIiOiIxMjM0NTY3"),
    ("basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ("openai", "sk-proj-Abc123Def456Ghi789Jkl012Mno345", "Abc123Def456Ghi789"),
    ("openai_legacy", "sk-Q2x9Lm4Np7Rs1Tv8Wy3Za6Bc5De0Fg2Hj4Kl7Mn9Pq1Rs", "Q2x9Lm4Np7Rs"),
    ("anthropic", "sk-ant-api03-Xy12Ab34Cd56Ef78Gh90-Ij12_Kl34Mn56", "Xy12Ab34Cd56"),
    ("aws_akia", "AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("aws_asia", "ASIAJ7Q2EXAMPLEKEYZ9", "J7Q2EXAMPLEKEY"),
    ("aws_aroa", "AROA3XFRBF23EXAMPLE0", "3XFRBF23EXAMPLE"),
    ("aws_secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("aws_secret_env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "K7MDENG/bPxR"),
    ("aws_secret_json", '{"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', "bPxRfiCY"),
    ("github_classic", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6"),
    ("github_oauth", "gho_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", "Z9y8X7w6V5u4"),
    ("github_user", "ghu_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "Q1w2E3r4T5y6"),
    ("github_server", "ghs_M1n2B3v4C5x6Z7l8K9j0H1g2F3d4S5a6P7o8", "M1n2B3v4C5x6"),
    ("github_refresh", "ghr_L1k2J3h4G5f6D7s8A9p0O1i2U3y4T5r6E7w8", "L1k2J3h4G5f6"),
    (
        "github_fine",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
        "ghijklmnop",
    ),
    ("gitlab", "glpat-Ab12Cd34Ef56Gh78Ij90", "Ab12Cd34Ef56"),
    ("slack_bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOp"),
    ("slack_user", "xoxp-123456789012-1234567890123-ZyXwVuTsRqPoNmLk", "ZyXwVuTsRqPo"),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/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",
        "Xy9Zw8Vu7Ts6",
    ),
    (
        "discord_webhook",
        "https://discord.com/api/webhooks/123456789012345678/Ab1_Cd2-Ef3Gh4Ij5Kl6",
        "Ab1_Cd2-Ef3Gh4",
    ),
    ("google", "AIzaSyD4f8Gh2Jk9Lm3Np7Qr1St5Vw0Xy6Za2Bc", "SyD4f8Gh2Jk9"),
    ("stripe_live", "sk_live_51Hx2Ab3Cd4Ef5Gh6Ij7Kl8", "51Hx2Ab3Cd4E"),
    ("stripe_restricted", "rk_live_51Hx2Ab3Cd4Ef5Gh6Ij7Kl8", "Cd4Ef5Gh6Ij7"),
    ("stripe_test", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWD"),
    ("huggingface", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AbCdEfGhIjKlMn"),
    ("npm", "npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78", "Ab12Cd34Ef56Gh78"),
    ("sendgrid", "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", "Ab12Cd34Ef56Gh78"),
    ("jwt", JWT, "eyJzdWIiOiIxMjM0NTY3"),
    ("pem", PEM, "MIIEowIBAAKCAQEAq7BF"),
    ("url_postgres", "postgres://admin:hunter2pass@localhost/db", "hunter2pass"),
    ("url_redis", "redis://:s3cr3tPassw0rd@cache:6379/0", "s3cr3tPassw0rd"),
    ("url_https", "https://marie:p4ssw0rdXYZ@host.example.com/path", "p4ssw0rdXYZ"),
    ("api_key_eq", "api_key=Zq8Wm3Rt6Yp1", "Zq8Wm3Rt6Yp1"),
    ("apikey_colon", "apikey: Zq8Wm3Rt6Yp1", "Zq8Wm3Rt6Yp1"),
    ("api_key_json", '{"api_key": "Zq8Wm3Rt6Yp1"}', "Zq8Wm3Rt6Yp1"),
    ("api_key_python", "Client(api_key='Zq8Wm3Rt6Yp1')", "Zq8Wm3Rt6Yp1"),
    ("x_api_key", "X-API-Key: Zq8Wm3Rt6Yp1", "Zq8Wm3Rt6Yp1"),
    ("password", "password=hunter2hunter2", "hunter2hunter2"),
    ("password_json_spaces", '{"password": "correct horse battery staple"}', "horse battery"),
    ("passwd", "passwd: Tr0ub4dor&3x", "Tr0ub4dor"),
    ("secret", "secret=Vq7Ls2Kp9Xw4", "Vq7Ls2Kp9Xw4"),
    ("client_secret", '{"client_secret": "Vq7Ls2Kp9Xw4Nb8"}', "Vq7Ls2Kp9Xw4"),
    ("access_token", '{"access_token": "ya29.A0ARrdaM-Xy12", "token_type": "Bearer"}', "A0ARrdaM-Xy12"),
    ("refresh_token", "refresh_token=1//0gXy12Ab34Cd56", "0gXy12Ab34Cd56"),
    ("private_key_kv", "private_key: Mn8Bv7Cx6Zl5Kj4", "Mn8Bv7Cx6Zl5"),
    ("query", "https://api.example.com/v1?api_key=Zq8Wm3Rt6Yp1&token=Hy7Ju6Ki5Lo4&page=2", "Hy7Ju6Ki5Lo4"),
    ("escaped_json", '{"arguments": "{\\"api_key\\": \\"abc123secretvalue\\"}"}', "abc123secretvalue"),
    ("escaped_twice", '"{\\\\\\"api_key\\\\\\": \\\\\\"abc123secretvalue\\\\\\"}"', "abc123secretvalue"),
    ("azure_connection", "AccountName=x;AccountKey=Ab12Cd34Ef56Gh78==;EndpointSuffix=net", "Ab12Cd34Ef56"),
    ("env_file", "OPENAI_API_KEY=Zq8Wm3Rt6Yp1Zq8\nDB_PASSWORD=Pa55w0rdXyz", "Pa55w0rdXyz"),
]


def _contexts(secret: str) -> Iterator[tuple[str, str]]:
    yield "alone", secret
    yield "prose", f"the value is {secret} as you asked"
    yield "start", f"{secret} then more words"
    yield "end", f"and at the very end {secret}"
    yield "json", json.dumps({"note": secret})
    yield "escaped_json", json.dumps({"arguments": json.dumps({"note": secret})})
    yield "escaped_twice", json.dumps({"outer": json.dumps({"arguments": json.dumps({"note": secret})})})
    yield "after_escaped_newline", json.dumps({"log": "first line\n" + secret + "\nlast line"})
    yield "parentheses", f"({secret})"
    yield "quoted_list", f"['{secret}', 'x']"
    yield "angle_brackets", f"<{secret}>"
    yield "full_stop", f"It is {secret}."
    yield "repr", repr({"note": secret})


def _unescaped(text: str) -> str:
    for _ in range(3):
        text = text.replace("\\\\", "\\").replace('\\"', '"').replace("\\n", "\n")
    return text


@pytest.mark.parametrize(("kind", "secret", "fragment"), SECRETS, ids=[s[0] for s in SECRETS])
def test_every_secret_kind_is_redacted_in_every_context(kind: str, secret: str, fragment: str) -> None:
    for context, text in _contexts(secret):
        redacted = REDACTOR.redact(text, "input.value")
        assert fragment not in _unescaped(redacted), (context, redacted)
        assert "[REDACTED:" in redacted, context


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to marie.curie@sorbonne.fr today", "write to [REDACTED:email] today"),
        ("key sk-proj-abcdefghijklmnop1234 here", "key [REDACTED:api_key] here"),
        ("aws AKIAABCDEFGHIJKLMNOP.", "aws [REDACTED:api_key]."),
        ("Authorization: Bearer eyJhbGciOiJI.eyJzdWIiOiIx.Sfl", "Authorization: Bearer [REDACTED:token]"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:credentials]"),
        ("Authorization: Token 9944b09199c62bcf9418ad84", "Authorization: Token [REDACTED:credentials]"),
        ('{"api_key": "abcd1234efgh5678"}', '{"api_key": "[REDACTED:api_key]"}'),
        ("api_key=abcd1234efgh5678&page=2", "api_key=[REDACTED:api_key]&page=2"),
        ("password=hunter2hunter2", "password=[REDACTED:password]"),
        ("DB_PASS: hunter22", "DB_PASS: [REDACTED:password]"),
        ("MYSQL_PWD=hunter22 PWD=/home/marie", "MYSQL_PWD=[REDACTED:password] PWD=/home/marie"),
        ("client_secret='abcdefghijkl'", "client_secret='[REDACTED:secret]'"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = [REDACTED:secret]"),
        ("private_key: Mn8Bv7Cx6Zl5Kj4", "private_key: [REDACTED:private_key]"),
        ("<password>hunter22</password>", "<password>[REDACTED:password]</password>"),
        ("X-Amz-Signature=0a1b2c3d4e5f6789&x=1", "X-Amz-Signature=[REDACTED:signature]&x=1"),
        (f"{PEM}\nafter", "[REDACTED:private_key]\nafter"),
        ("postgres://user:pw@localhost/db", "postgres://user:[REDACTED:password]@localhost/db"),
        ("redis://:pw@cache:6379", "redis://:[REDACTED:password]@cache:6379"),
        ("https://u:p@host.example.com/x", "https://u:[REDACTED:password]@host.example.com/x"),
        (
            "https://hooks.slack.com/services/T0/B0/XyZ123",
            "https://hooks.slack.com/services/[REDACTED:webhook]",
        ),
        (
            '{"arguments": "{\\"token\\": \\"abc123secret\\"}"}',
            '{"arguments": "{\\"token\\": \\"[REDACTED:token]\\"}"}',
        ),
        (
            "İstanbul password=hunter22 İ marie@curie.org",
            "İstanbul password=[REDACTED:password] İ [REDACTED:email]",
        ),
    ],
)
def test_a_replacement_keeps_the_key_and_names_what_was_removed(text: str, expected: str) -> None:
    assert REDACTOR.redact(text, "input.value") == expected


HARMLESS = [
    '{"max_tokens": 512, "total_tokens": 1234, "prompt_tokens": 1000, "completion_tokens": 234}',
    "token_count: 1234567890, tokens=512, tokenizer: cl100k_base, token_type: bearer_token_v2",
    '{"token": 123456789, "next_page_token": "", "token": null, "password": ""}',
    "Please reset your password: click the link we sent. Your password must have 8 characters.",
    "password: abc, token=abc, secret: yes, api_key: none, pwd=1234",
    '{"key": "colour", "value": "blue", "primary_key": "user_id_12345", "public_key": "ssh-ed25519AAAA"}',
    "PWD=/home/marie/projects OLDPWD=/tmp SHELL=/bin/bash",
    "bypass: enabled, compass=north-north-west, passport=PL1234567",
    "The bearer of bad news has a basic understanding of authorization.",
    "Use sk-learn-compatible-estimators and ask-questions-about-everything-here.",
    "See icon@2x.png and logo@3x.png; call @mention or email support at the desk.",
    "Running on localhost:8080, see http://example.com/path/to/page?q=1&page=2#top",
    "The model gpt-4o-mini-2024-07-18 returned chatcmpl-9xYzAbCdEfGhIjKlMnOp in 1.2 s.",
    "signature: Marie Curie, sig: MC",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert REDACTOR.redact(text, "output.value") == text


def test_a_realistic_chat_history_without_secrets_is_unchanged() -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
        {"role": "user", "content": "What is the key difference between a token and a word?"},
        {
            "role": "assistant",
            "content": "A token is a piece of text the model reads; a word may be several.",
        },
        {"role": "user", "content": "How do I reset my password? The basic plan has no support."},
    ]
    metadata = {
        "model": "gpt-4o-mini-2024-07-18",
        "usage": {"prompt_tokens": 1234, "completion_tokens": 321, "total_tokens": 1555},
        "max_tokens": 512,
    }
    text = json.dumps({"messages": messages * 30, "metadata": metadata})
    assert REDACTOR.redact(text, "input.value") == text


@pytest.mark.parametrize(
    ("group", "caught", "ignored"),
    [
        ("email", "marie@curie.org", "sk-proj-Abc123Def456Ghi789"),
        ("api_key", "sk-proj-Abc123Def456Ghi789", "marie@curie.org"),
        ("bearer", "Bearer abcDEF123456ghiJKL789", "password=hunter2hunter2"),
        ("url_password", "postgres://u:hunter2pass@db/x", "Bearer abcDEF123456ghiJKL789"),
        ("private_key", PEM, "postgres://u:hunter2pass@db/x"),
    ],
)
def test_each_group_can_be_chosen_alone(group: str, caught: str, ignored: str) -> None:
    redactor = Redactor([group])
    assert "[REDACTED" in redactor.redact(caught, "x")
    assert redactor.redact(ignored, "x") == ignored


def test_the_three_original_group_names_still_work_and_unknown_names_fail_early() -> None:
    assert {"email", "api_key", "bearer"} <= set(PATTERN_GROUPS)
    assert Redactor(("email", "api_key", "bearer")).active
    with pytest.raises(ValueError, match="unknown redaction patterns"):
        Redactor(["emails"])


def test_without_patterns_or_hook_the_redactor_is_inactive_and_changes_nothing() -> None:
    assert not Redactor(()).active
    assert Redactor((), hook=lambda text, attribute: text).active
    assert Redactor(()).redact("marie@curie.org", "x") == "marie@curie.org"


def test_the_hook_sees_the_already_redacted_text_and_the_attribute() -> None:
    seen: list[tuple[str, str]] = []

    def hook(text: str, attribute: str) -> str:
        seen.append((text, attribute))
        return text.replace("Curie", "C.")

    redactor = Redactor(hook=hook)
    assert redactor.redact("Marie Curie <marie@curie.org>", "output.value") == "Marie C. <[REDACTED:email]>"
    assert seen == [("Marie Curie <[REDACTED:email]>", "output.value")]


@pytest.mark.parametrize(
    ("hook", "placeholder"),
    [
        (lambda text, attribute: 1 / 0, "[REDACTED: redact hook failed]"),
        (lambda text, attribute: None, "[REDACTED: redact hook returned a non-string]"),
    ],
)
def test_a_hook_that_fails_withholds_the_value(hook: Callable[[str, str], str], placeholder: str) -> None:
    assert Redactor(hook=hook).redact("marie@curie.org", "x") == placeholder


@pytest.mark.parametrize(("body", "warning"), [("1 / 0", "the redact hook raised"), ("None", "non-string")])
def test_a_failing_hook_is_warned_about_once(
    run_python: RunPython, tmp_path: Path, body: str, warning: str
) -> None:
    code = (
        "from tracesim._redact import Redactor\n"
        f"redactor = Redactor(hook=lambda text, attribute: {body})\n"
        "print(redactor.redact('a', 'input.value'), redactor.redact('b', 'output.value'))\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("[REDACTED: redact hook") == 2
    assert result.stderr.count(warning) == 1


# ---------------------------------------------------------------- properties


@pytest.fixture
def raising() -> Iterator[None]:
    """Internal errors raise (as under tracesim's own configured runs), so a bug cannot hide."""
    _internal_errors.set_raise(True)
    yield
    _internal_errors.set_raise(False)


FRAGMENTS = st.sampled_from(
    [s[1] for s in SECRETS]
    + ["token", "key", "password", '"', "'", "\\", '\\"', ":", "=", " ", "\n", "@", "-", "_", "…", "İ", "é"]
    + ["Bearer ", "basic ", "://", "[REDACTED:x]", "-----END RSA PRIVATE KEY-----", "…[truncated: 9 chars]"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(FRAGMENTS | st.text(max_size=12), max_size=12).map("".join))
def test_redaction_never_raises_and_is_idempotent(raising: None, text: str) -> None:
    once = REDACTOR.redact(text, "x")
    assert REDACTOR.redact(once, "x") == once


# ---------------------------------------------------------------- the fast path against the reference

# Gates, probes and the backwards search for key names only skip work: what they let through
# must be exactly what every rule run over the whole text (`exhaustive`) replaces.
KEY_NAMES = [
    "token", "api_key", "apikey", "password", "passwd", "passphrase", "passcode", "pwd", "db_pass",
    "secret", "client_secret", "sig", "signature", "authorization", "x-api-key", "cache_key",
    "total_tokens", "monkey", "bypass", "MYSQL_PWD", "AWS_SECRET_ACCESS_KEY", "X-Amz-Signature",
]  # fmt: skip
PLANTED = st.sampled_from(
    [s[1] for s in SECRETS]
    + KEY_NAMES
    + [name.upper() for name in KEY_NAMES]
    + [name.title() for name in KEY_NAMES]
    + [":", "=", ">", ":=", "=>", '"', "'", "`", "\\", '\\"', "]", "[", " ", "\t", "\n", "<", "&", "?"]
    + ["Bearer ", "basic ", "://", "@", "-", "_", "A", "eyJ", "SG.", "…[truncated: 9 chars]", "[REDACTED:x]"]
    + ["İ", "\u212a", "ſ", "Σ", "é", "hunter2hunter2", "abc123secretvalue", "Zq8Wm3Rt6Yp1", "12345678"]
)
NAMES = st.sampled_from(
    KEY_NAMES + [name.upper() for name in KEY_NAMES] + [name.title() for name in KEY_NAMES]
)
KEY_VALUE = st.tuples(  # a name, its closing quote, a `]`, spaces, a separator, the value's quote, a value
    NAMES,
    st.sampled_from(["", '"', "'", '\\"', '\\\\\\"']),
    st.sampled_from(["", "]"]),
    st.sampled_from(["", " ", "\t", "  "]),
    st.sampled_from([":", "=", ">", ":=", "=>"]),
    st.sampled_from(["", " "]),
    st.sampled_from(["", '"', "'", '\\"', "`"]),
    st.sampled_from(
        ["hunter2hunter2", "Zq8Wm3Rt6Yp1", "12345678", "null", "Basic dXNlcjpwYXNzd29yZA==", "x"]
    ),
).map("".join)
PREFIXES = [
    "sk-", "sk-proj-", "glpat-", "gldt-", "xoxb-", "xapp-", "xai-", "pplx-", "pypi-", "GOCSPX-", "ghp_",
    "github_pat_", "sk_live_", "rk_test_", "whsec_", "hf_", "npm_", "gsk_", "r8_", "dop_v1_", "shpat_",
    "AKIA", "ASIA", "AIza", "ATATT", "SG.", "eyJ", "-----BEGIN RSA PRIVATE KEY-----", "Bearer ", "Basic ",
]  # fmt: skip
TOKEN = st.tuples(  # a token's prefix, then a body of any length around the shortest a rule accepts
    st.sampled_from(PREFIXES),
    st.text(alphabet="abcdefABCDEF0123456789_-+/=.", max_size=70),
).map("".join)
PLANTED_TEXT = st.lists(PLANTED | KEY_VALUE | TOKEN | st.text(max_size=8), max_size=24).map("".join)
# Over 1 KB of prose with every anchor in it: long texts visit anchors with str.find first.
PROSE = "A well-known key: see the basic plan_B, SG and eyJ at 10:30 or a=b > c. " * 16
REDACTORS = [
    Redactor(),
    Redactor(["api_key"]),
    Redactor(["bearer"]),
    Redactor(["email", "url_password"]),
    Redactor(native=False),  # the pure-Python probes: what runs where the probe is not compiled
    Redactor(["api_key"], native=False),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=PLANTED_TEXT, long=st.sampled_from(["", PROSE, PROSE * 8]), at_end=st.booleans())
def test_the_fast_path_replaces_exactly_what_every_rule_over_the_whole_text_does(
    raising: None, text: str, long: str, at_end: bool
) -> None:
    text = long + text if at_end else text + long
    for redactor in REDACTORS:
        assert redactor._patterns(text) == redactor._patterns(text, exhaustive=True)


# ---------------------------------------------------------------- the compiled probe

COMPILED = [redactor for redactor in REDACTORS if redactor._probe is not None]


def test_the_compiled_probe_is_built_where_a_c_compiler_is() -> None:
    # `make test` installs tracesim with its build hook, which compiles the probe when it can.
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): tracesim was installed without its compiled probe")
    assert load() is not None, "the compiled probe is missing: reinstall tracesim (pip install -e .)"
    assert len(COMPILED) == 4


def test_pure_python_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESIM_PURE_PYTHON", "1")
    assert load() is None
    redactor = Redactor()
    assert redactor._probe is None
    assert redactor.redact("key sk-proj-Abc123Def456Ghi789Jkl", "x") == "key [REDACTED:api_key]"


@settings(max_examples=300, deadline=None)
@given(text=PLANTED_TEXT, long=st.sampled_from(["", PROSE]), at_end=st.booleans())
def test_the_compiled_probe_finds_every_place_a_rule_could_start(text: str, long: str, at_end: bool) -> None:
    # A needle is a necessary condition: the first match of each rule is at or after the place the
    # probe gives it, and key names are found exactly where the Python probe finds them.
    text = long + text if at_end else text + long
    low = _lower(text)
    for redactor in COMPILED:
        places, keys = redactor._probe.scan(text) or ((-1,) * len(redactor._rules), None)
        for place, rule in zip(places, redactor._rules, strict=True):
            target = low if rule.lowered else text
            if isinstance(rule, _KeyValues):
                expected = rule.probe(target) or {}
                found: dict[str, set[int]] = {}
                for number, position, separator in keys or ():
                    found.setdefault(ANCHORS[number], set()).add(position)
                    assert text[separator] in ":=>"
                query = "=" in text
                found = {anchor: places for anchor, places in found.items() if anchor != "g" or query}
                # All of them, but `key` after a word that makes no secret of it (`cache_key`)
                assert {(a, p) for a, places in found.items() for p in places} == {
                    (a, p)
                    for a, places in expected.items()
                    for p in places
                    if not _unqualified_key(low, a, p)
                }
                continue
            match = rule.first.search(target)
            if match is not None:
                assert 0 <= place <= match.start(), (type(rule).__name__, text)


def _unqualified_key(low: str, anchor: str, position: int) -> bool:
    """Whether the name at ``position`` is ``key`` after an identifier `_key_label` refuses."""
    if anchor != "k" or not low.startswith("key", position):
        return False
    before = low[max(0, position - 48) : position]
    prefix = before[len(before) - len(re.match(r"[a-z0-9_.\-]*", before[::-1]).group()) :]  # type: ignore[union-attr]
    return _key_label(prefix, "key") is None


def test_prose_and_json_without_secrets_give_the_compiled_probe_no_place() -> None:
    probe = REDACTOR._probe
    if probe is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    messages = [
        {"role": "system", "content": "You are a helpful assistant for gpt-4o-mini-2024-07-18 users."},
        {"role": "user", "content": "What is the key difference between a token and a word? — Noël"},
        {"role": "user", "content": "How do I reset my password? The basic plan has no support."},
    ]
    chat = json.dumps({"messages": messages * 30}, ensure_ascii=False)
    for text in (PROSE * 8, chat, "Marie Curie 👩‍🔬 a étudié à Paris — " * 50):
        assert probe.scan(text) is None, text[:80]  # "A well-known key:" names no secret either
    assert probe.scan('{"cache_key": "v1"}') is None  # `cache_key` names no secret
    assert probe.scan('{"api_key": "v1"}')[1] == [(0, 6, 10)]  # (k, the "k" of key, the ":")


@pytest.mark.parametrize(
    "text",
    [
        "sk-proj-Abc123Def456Ghi789Jkl",
        "ключ sk-proj-Abc123Def456Ghi789Jkl",  # two bytes a character
        "🔑 sk-proj-Abc123Def456Ghi789Jkl",  # four bytes a character
        "BEARER abcDEF123456ghiJKL789",
        "TO\u212aEN=hunter2hunter2",  # KELVIN SIGN lowers to "k"
        "Bearer ab…[truncated: 9 chars]",  # a value cut after a few characters
        "x Basic dXNl…[truncated: 90 chars]",
        "Authorization: Bearer ab…[truncated: 9 chars]",
        "my_api\u212aEY=hunter2hunter2",  # KELVIN SIGN in a key name after a key word
        "İapi_key=hunter2hunter2 " + "x" * 60 + "_" * 40 + "api_key=hunter2hunter2",
        "api" + "_" * 45 + "key=hunter2hunter2",  # the key word within the 48 characters read back
        "api" + "_" * 46 + "key=hunter2hunter2",  # and just beyond them
        "PASSWORD\u0130=x",
    ],
)
def test_the_compiled_probe_reads_every_string_width_and_case(text: str) -> None:
    assert REDACTOR._patterns(text) == REDACTOR._patterns(text, exhaustive=True)
    assert REDACTOR._patterns(text) == Redactor(native=False)._patterns(text)


@pytest.mark.parametrize(
    ("needles", "message"),
    [
        ((("ключ", 0, 0, False, 0, "", 0, "", False, 0, False),), "ASCII"),
        ((("key", 0, 0, True, 0, "", 0, "", False, 0, False),), "cannot trigger"),
        ((("ab", 5, 0, False, 0, "", 0, "", False, 0, False),), "out of range"),
        ((("ab", 0, 0, False, 3, "", 0, "", False, 0, False),), "out of range"),
    ],
)
def test_a_bad_needle_is_refused_with_what_is_wrong(needles: tuple[Any, ...], message: str) -> None:
    module = load()
    if module is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    with pytest.raises(ValueError, match=message):
        module.Probe(1, needles, (), " ", ())


def test_a_probe_refuses_what_is_not_a_tuple() -> None:
    module = load()
    if module is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    with pytest.raises(TypeError, match="a needle must be a tuple"):
        module.Probe(1, (["ab", 0, 0, False, 0, "", 0, "", False, 0, False],), (), " ", ())
    with pytest.raises(TypeError, match="a name must be a tuple"):
        module.Probe(1, (), (["yek", 0, 0, True],), " ", ())


def test_a_probe_built_from_another_version_is_not_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    module = load()
    if module is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    monkeypatch.setattr(module, "VERSION", module.VERSION + 1)  # as an in-place build left behind
    assert load() is None
    assert Redactor()._probe is None
    assert "another version" in caplog.text


def test_a_redactor_is_pickled_and_copied_with_its_probe_built_again() -> None:
    text = 'key sk-proj-Abc123Def456Ghi789Jkl and {"password": "hunter2!!"}'
    for redactor in (Redactor(), Redactor(["api_key"], native=False)):
        for copied in (pickle.loads(pickle.dumps(redactor)), copy.deepcopy(redactor)):
            assert (copied._probe is not None) == (redactor._probe is not None)
            assert copied.redact(text, "x") == redactor.redact(text, "x")


def test_each_key_name_spelt_backwards_is_a_word_its_forward_regex_finds() -> None:
    for anchor, names in _BACKWARDS.items():
        forward = re.compile(_KEYS[anchor])
        for name, at in names.items():
            word = name[::-1]
            match = forward.match(word + "=", at)
            assert word[at] == anchor, word
            assert match is not None, word
            assert match.end() == len(word), word


@pytest.mark.parametrize(("kind", "secret", "fragment"), SECRETS, ids=[s[0] for s in SECRETS])
def test_each_secret_in_each_context_is_replaced_alike_by_the_fast_path_and_the_reference(
    raising: None, kind: str, secret: str, fragment: str
) -> None:
    for context, text in _contexts(secret):
        for long in ("", PROSE * 8):
            for variant in (long + text, text + long, text.upper(), text.lower()):
                assert REDACTOR._patterns(variant) == REDACTOR._patterns(variant, exhaustive=True), context


CUT_SECRETS = [  # (text, the body no 8-character piece of which may survive a cut)
    ("sk-proj-Abc123Def456Ghi789Jkl012Mno345", "Abc123Def456Ghi789Jkl012Mno345"),
    ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("marie.curie@sorbonne-universite.fr", "marie.curie@sorbonne-universite.fr"),
    ("password=hunter2hunter2", "hunter2hunter2"),
    ('"password": "correct horse battery staple"', "correct horse battery staple"),
    ("Authorization: Bearer abcDEF123456ghiJKL789mno", "abcDEF123456ghiJKL789mno"),
    ("postgres://admin:hunter2pass@db.example.com/x", "hunter2pass"),
    (JWT, JWT[3:]),
    (PEM, PEM[32:-30]),
    ('{\\"api_key\\": \\"abc123secretvalue\\"}', "abc123secretvalue"),
    ("https://example.com/" + "p" * 300 + "?api_key=Zq8Wm3Rt6Yp1Xc9&x=1", "Zq8Wm3Rt6Yp1Xc9"),
]
WORDS = st.lists(
    st.sampled_from(["the", "model", "said", "Warsaw", "1867", "a", "b", "é", "physics", "—", "x" * 40]),
    min_size=1,
)
SEPARATORS = st.sampled_from([" ", "\n", '"', "'", "(", ", ", "; ", "=", ": ", "\\n"])


@pytest.mark.parametrize(("secret", "body"), CUT_SECRETS, ids=range(len(CUT_SECRETS)))
@settings(max_examples=25, deadline=None)
@given(before=WORDS, after=WORDS, left=SEPARATORS, right=SEPARATORS, limit=st.integers(64, 1200))
def test_no_piece_of_a_secret_survives_a_cut(
    secret: str, body: str, before: list[str], after: list[str], left: str, right: str, limit: int
) -> None:
    filler = " ".join(before * (limit // 4 + 1))
    tail = right + " ".join(after * (MARGIN // 2 + 1))
    pieces = {body[i : i + 8] for i in range(len(body) - 7)}
    for offset in range(
        max(0, limit - len(secret) - 3), limit + 3
    ):  # the secret at every place around the cut
        text = filler[: max(0, offset - len(left))] + left + secret + tail
        at = safe_cut(text, limit)
        assert limit - 2 * MARGIN <= at <= limit
        redacted = REDACTOR.redact(cut(text, limit, len(text)), "input.value")
        assert not any(piece in redacted for piece in pieces), (offset, redacted[-120:])


def test_a_token_that_could_be_a_secret_is_dropped_whole_a_longer_one_keeps_most_of_the_limit() -> None:
    text = "see https://example.com/a/very/long/path and more"
    assert text[: safe_cut(text, 12)] == "see "
    assert safe_cut("x" * 5_000_000, 32 * 1024) == 32 * 1024 - MARGIN  # room for the marker
    assert safe_cut("x" * 5_000, 100) == 50  # a small limit gives up at most half
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    assert 32 * 1024 - MARGIN <= safe_cut(png * 500, 32 * 1024) <= 32 * 1024  # after a "/"
    assert safe_cut("short text", 100) == len("short text")
    assert safe_cut("anything", 0) == 0


def test_a_value_cut_open_is_redacted_up_to_the_marker() -> None:
    text = '{"password": "correct horse battery staple"}'
    kept = text[:25] + "…[truncated: 45 chars]"  # a cut elsewhere than safe_cut would put it
    assert REDACTOR.redact(kept, "x") == '{"password": "[REDACTED:password]…[truncated: 45 chars]'
    assert REDACTOR.redact("password=abc…[truncated]", "x") == "password=[REDACTED:password]…[truncated]"


# ---------------------------------------------------------------- cost


ADVERSARIAL = {  # each measured at most 0.11 s of CPU (redact + safe_cut), on a loaded 2-core machine
    "at_sign_after_a_long_word": "a" * 100_000 + "@",
    "equal_signs": "=" * 1_000_000,
    "colons": ":" * 1_000_000,
    "key_names": "password" * 125_000,
    "key_names_and_separators": "token=" * 170_000,
    "backslashes": "\\" * 1_000_000,
    "dotted_domain": "x@" + "a." * 500_000,
    "bearer_and_a_long_word": "Bearer " + "A" * 1_000_000,
    "jwt_prefix": "eyJ" + "a" * 1_000_000,
    "unclosed_quote": "password='" + "\\" * 1_000_000,
    "url_authorities": "://a:" * 200_000,
    "prose": "Marie Curie was born in Warsaw in 1867 and studied physics in Paris. " * 15_000,
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_adversarial_megabytes_are_redacted_in_linear_time(kind: str) -> None:
    text = ADVERSARIAL[kind]
    started = time.process_time()
    REDACTOR.redact(text, "x")
    safe_cut(text, 32 * 1024)
    assert time.process_time() - started < 2.0


@pytest.mark.parametrize(
    "text",
    ["a@b.cd " * 10_000, "password: x, " * 10_000, '"token": "' * 10_000, "-" * 100_000, "sk_" * 30_000],
)
def test_inputs_dense_with_candidates_are_handled(text: str) -> None:
    redacted = REDACTOR.redact(text, "x")
    assert "a@b.cd" not in redacted  # every one of the 10,000 addresses, where there were any


def test_docstring_examples() -> None:
    assert doctest.testmod(tracesim._redact, optionflags=doctest.ELLIPSIS).failed == 0


def test_key_locator_before_python_3_11_finds_what_the_possessive_one_finds() -> None:
    """Python 3.10 has no possessive `*+`: the lookahead-and-backreference form used there must
    match exactly where and what the 3.11 form matches (a run that gives nothing back)."""
    from tracesim._redact._keys import SKIP_BACK

    skip = re.escape(SKIP_BACK)
    names = "password|api_key|token|key"
    possessive = re.compile(rf":[{skip}]*+(?P<name>{names})")
    emulated = re.compile(rf":(?=(?P<run>[{skip}]*))(?P=run)(?P<name>{names})")
    pieces = [":", " ", "\t", "]", '"', "'", "\\", "password", "api_key", "key", "token", "x", "=", "ke"]
    rng = __import__("random").Random(7)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12))) for _ in range(5000)]
    texts += [': "password', ":  ]key", ":\\\\'token", ": x password", ":: key"]
    for text in texts:
        for start in range(len(text)):
            a, b = possessive.match(text, start), emulated.match(text, start)
            assert (a and (a.span(), a["name"])) == (b and (b.span(), b["name"])), (text, start)
