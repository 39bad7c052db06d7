"""What an LLM call used and what it cost: token usage read from span attributes, and a price table.

Usage is read from whichever convention the span follows: the OpenTelemetry GenAI conventions
(``gen_ai.usage.input_tokens``, ...), OpenInference (``llm.token_count.prompt``, ...) or
OpenLLMetry (``gen_ai.usage.prompt_tokens``, ...). Input counts include cached input, as every
one of them reports it.

Prices are US dollars per million tokens. The shipped table (`SHIPPED_PRICES`) holds OpenAI's
standard-tier list prices as known on 2026-11-22 (`PRICES_AS_OF`), from OpenAI's pricing page
(`PRICES_SOURCE`): read on OpenAI's model pages for gpt-5-nano and the two embedding models,
and for the others on dated third-party copies of that page (March to November 2026) that
agree with one another. Batch, flex and priority tiers are not modelled. Prices change: add
or correct entries with the ``prices`` setting (``tracesim.yaml``), which is merged over this
table; a model that has no price gets no cost, never a cost of zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from tracesim._semconv import LLM_COUNTED_IN_PARENT, LLM_TWIN_OF

__all__ = [
    "INPUT_KEYS",
    "OUTPUT_KEYS",
    "PRICES_AS_OF",
    "PRICES_SOURCE",
    "SHIPPED_PRICES",
    "USAGE_KEYS",
    "Price",
    "PriceError",
    "PriceTable",
    "Usage",
    "first_count",
    "format_usd",
    "has_usage",
    "openinference_usage",
    "parse_prices",
    "price_hint",
    "read_usage",
]

PRICES_SOURCE: Final = "https://platform.openai.com/docs/pricing"
PRICES_AS_OF: Final = "2026-11-22"
PER_TOKENS: Final = 1_000_000
"""Prices are per this many tokens."""

# Read: GenAI semantic conventions first, then OpenInference, then OpenLLMetry.
GEN_AI_INPUT: Final = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT: Final = "gen_ai.usage.output_tokens"
GEN_AI_CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_PROVIDER: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"
OPENLLMETRY_INPUT: Final = "gen_ai.usage.prompt_tokens"
OPENLLMETRY_OUTPUT: Final = "gen_ai.usage.completion_tokens"
OPENLLMETRY_CACHE_READ: Final = "gen_ai.usage.cache_read_input_tokens"
# Read and written (OpenInference, what Phoenix and Arize show).
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_TOKENS_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKENS_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKENS_TOTAL: Final = "llm.token_count.total"
LLM_TOKENS_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_COST_PROMPT: Final = "llm.cost.prompt"
LLM_COST_COMPLETION: Final = "llm.cost.completion"
LLM_COST_TOTAL: Final = "llm.cost.total"

INPUT_KEYS: Final = (GEN_AI_INPUT, LLM_TOKENS_PROMPT, OPENLLMETRY_INPUT)
"""Where input tokens are read from, in this order; every convention writes one when it reports usage."""
OUTPUT_KEYS: Final = (GEN_AI_OUTPUT, LLM_TOKENS_COMPLETION, OPENLLMETRY_OUTPUT)
"""Where output tokens are read from, in this order."""
_CACHE_KEYS = (GEN_AI_CACHE_READ, LLM_TOKENS_CACHE_READ, OPENLLMETRY_CACHE_READ)
USAGE_KEYS: Final = frozenset(INPUT_KEYS + OUTPUT_KEYS)
"""Any of these on a span: it reports token usage (most spans have none, found in one pass)."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: input, output and (when the model has one) cached input.

    Example:
        >>> Price(input=0.15, output=0.60, cached_input=0.075).cost(1_000, 200, cached=400)
        (0.00012, 0.00012)
    """

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, *, cached: int = 0) -> tuple[float, float]:
        """``(prompt cost, completion cost)`` in dollars; cached input is part of ``input_tokens``."""
        prompt = float(input_tokens) * self.input
        if cached and self.cached_input is not None:
            cached = min(cached, input_tokens)
            prompt = (input_tokens - cached) * self.input + cached * self.cached_input
        return prompt / PER_TOKENS, output_tokens * self.output / PER_TOKENS


def _p(input: float, cached_input: float | None, output: float) -> Price:
    return Price(input=input, output=output, cached_input=cached_input)


SHIPPED_PRICES: Final[Mapping[str, Price]] = MappingProxyType(
    {
        # model: input, cached input, output (USD per 1M tokens, standard tier)
        "gpt-5": _p(1.25, 0.125, 10.00),
        "gpt-5-mini": _p(0.25, 0.025, 2.00),
        "gpt-5-nano": _p(0.05, 0.005, 0.40),
        "gpt-5-pro": _p(15.00, None, 120.00),  # listed so the prefix rule does not price it as gpt-5
        "gpt-4.1": _p(2.00, 0.50, 8.00),
        "gpt-4.1-mini": _p(0.40, 0.10, 1.60),
        "gpt-4.1-nano": _p(0.10, 0.025, 0.40),
        "gpt-4o": _p(2.50, 1.25, 10.00),
        "gpt-4o-mini": _p(0.15, 0.075, 0.60),
        "o3": _p(2.00, 0.50, 8.00),
        "o3-mini": _p(1.10, 0.55, 4.40),  # likewise, not o3's price
        "o3-pro": _p(20.00, None, 80.00),  # likewise
        "o4-mini": _p(1.10, 0.275, 4.40),
        "text-embedding-3-small": _p(0.02, None, 0.0),
        "text-embedding-3-large": _p(0.13, None, 0.0),
    }
)
"""OpenAI's list prices as known on `PRICES_AS_OF` (see the module docstring for the sources)."""

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4})$")  # gpt-4o-mini-2024-07-18, gpt-4-0613
_LOOKUP_CACHE = 1024


class PriceTable:
    """The shipped prices with the user's merged over them, and the lookup of a model's price.

    A model is found by its exact name (case-insensitive), else by its name without a date
    suffix (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``), else by the longest name in the
    table that it starts with, followed by ``-`` (``gpt-4.1-nano-lab`` -> ``gpt-4.1-nano``).

    Example:
        >>> table = PriceTable({"my-model": Price(input=1.0, output=2.0)})
        >>> table.lookup("gpt-4o-mini-2024-07-18") == table.lookup("gpt-4o-mini")
        True
        >>> table.lookup("my-model").output, table.lookup("llama-3")
        (2.0, None)
    """

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        merged = {name.lower(): price for name, price in SHIPPED_PRICES.items()}
        merged.update({name.strip().lower(): price for name, price in (prices or {}).items()})
        self.prices: Mapping[str, Price] = MappingProxyType(merged)
        # Longest first, so the first prefix that matches is the longest one.
        self._by_length = sorted(merged, key=len, reverse=True)
        self._found: dict[str, Price | None] = {}

    def lookup(self, model: str) -> Price | None:
        """The price of ``model``, or None when the table has none."""
        found = self._found.get(model, self)
        if found is not self:
            return found  # type: ignore[return-value]
        price = self._search(model.strip().lower())
        if len(self._found) >= _LOOKUP_CACHE:
            self._found.clear()  # a service that names many models: start over, stay bounded
        self._found[model] = price
        return price

    def _search(self, name: str) -> Price | None:
        price = self.prices.get(name)
        if price is None:
            price = self.prices.get(_DATE_SUFFIX.sub("", name))
        if price is None:
            key = next((k for k in self._by_length if name.startswith(k + "-")), None)
            price = self.prices[key] if key is not None else None
        return price

    def cost(self, usage: Usage) -> tuple[float, float] | None:
        """``(prompt, completion)`` dollars of a call: the model that answered, else the one asked for."""
        for model in (usage.model, usage.request_model):
            price = self.lookup(model) if model else None
            if price is not None:
                return price.cost(
                    usage.input_tokens or 0, usage.output_tokens or 0, cached=usage.cached_tokens
                )
        return None


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one LLM call used, read from its span (see `read_usage`).

    ``model`` is the model that answered when the span says so, else the one asked for;
    ``cost`` is the span's own ``llm.cost.total`` (written at export with the configured prices).
    """

    model: str | None
    request_model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int
    cost: float | None = None

    def priced(self, table: PriceTable) -> float | None:
        """Dollars: the span's own cost when it has one, else from ``table``; None when unknown."""
        if self.cost is not None:
            return self.cost
        split = table.cost(self)
        return None if split is None else split[0] + split[1]


def read_usage(attributes: Mapping[str, Any], *, twins: bool = False) -> Usage | None:
    """The token usage of a span, or None when it reports no input or output token count.

    None too for a call another span counts: its parent's (``tracesim.llm.counted_in_parent``)
    or, unless ``twins`` (a run whose spans hold only one of the two), its twin's beside it
    (``tracesim.llm.twin_of``).

    Example:
        >>> usage = read_usage({"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 24})
        >>> usage.model, usage.input_tokens, usage.output_tokens
        ('gpt-4o-mini', 24, None)
    """
    if USAGE_KEYS.isdisjoint(attributes):  # most spans: one pass over their keys, in C
        return None
    if attributes.get(LLM_COUNTED_IN_PARENT) is True:  # the same call as its parent span: count it once
        return None
    if not twins and LLM_TWIN_OF in attributes:  # the same call as another instrumentation's span
        return None
    tokens_in = first_count(attributes, INPUT_KEYS)
    tokens_out = first_count(attributes, OUTPUT_KEYS)
    if tokens_in is None and tokens_out is None:
        return None
    request = _text(attributes.get(GEN_AI_REQUEST_MODEL))
    model = _text(attributes.get(GEN_AI_RESPONSE_MODEL)) or request or _text(attributes.get(LLM_MODEL_NAME))
    cost: Any = attributes.get(LLM_COST_TOTAL)
    return Usage(
        model=model,
        request_model=request or model,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_tokens=first_count(attributes, _CACHE_KEYS) or 0,
        cost=float(cost) if _is_amount(cost) else None,
    )


def openinference_usage(attributes: Mapping[str, Any], table: PriceTable) -> dict[str, Any] | None:
    """The OpenInference usage attributes a span lacks: model, token counts and, when priced, cost.

    Backends that read OpenInference (Phoenix, Arize) then show the tokens and cost of calls
    traced with the GenAI or OpenLLMetry conventions. Attributes already present are kept.

    Example:
        >>> attrs = {"gen_ai.response.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1000,
        ...          "gen_ai.usage.output_tokens": 100}
        >>> added = openinference_usage(attrs, PriceTable())
        >>> added["llm.model_name"], added["llm.token_count.total"], round(added["llm.cost.total"], 8)
        ('gpt-4o-mini', 1100, 0.00021)
    """
    usage = read_usage(attributes)
    if usage is None:
        return None
    add: dict[str, Any] = {}
    tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
    candidates: tuple[tuple[str, Any], ...] = (
        (LLM_MODEL_NAME, usage.model),
        (LLM_TOKENS_PROMPT, tokens_in),
        (LLM_TOKENS_COMPLETION, tokens_out),
        (LLM_TOKENS_TOTAL, (tokens_in or 0) + (tokens_out or 0)),
        (LLM_TOKENS_CACHE_READ, usage.cached_tokens or None),
        (LLM_PROVIDER, _text(attributes.get(GEN_AI_PROVIDER)) or _text(attributes.get(GEN_AI_SYSTEM))),
    )
    for key, value in candidates:
        if value is not None and key not in attributes:
            add[key] = value
    if usage.cost is None and LLM_COST_PROMPT not in attributes and LLM_COST_COMPLETION not in attributes:
        split = table.cost(usage)
        if split is not None:
            add[LLM_COST_PROMPT], add[LLM_COST_COMPLETION] = split
            add[LLM_COST_TOTAL] = split[0] + split[1]
    return add or None


def first_count(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first of ``keys`` holding a token count (a whole number, not negative), or None."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            if type(value) is int and value >= 0:
                return value
            if type(value) is float and value >= 0 and value.is_integer():
                return int(value)
    return None


def _is_amount(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value >= 0


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# ---------------------------------------------------------------- configuration


class PriceError(ValueError):
    """A ``prices`` entry tracesim cannot use; ``setting`` names the exact key to change."""

    def __init__(self, setting: str, value: Any, accepted: str) -> None:
        super().__init__(f"{setting}: {accepted}")
        self.setting, self.value, self.accepted = setting, value, accepted


_FIELDS = ("input", "output", "cached_input")
_SHAPE = "a mapping of model names to {input: X, output: Y, cached_input: Z} in USD per 1M tokens"


def parse_prices(value: Any) -> Mapping[str, Price]:
    """The ``prices`` setting: model name -> `Price`, each number checked.

    Raises:
        PriceError: naming the model and field to change, e.g. ``prices.gpt-4o.output``.

    Example:
        >>> parse_prices({"my-model": {"input": 1, "output": 2}})
        {'my-model': Price(input=1.0, output=2.0, cached_input=None)}
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PriceError("prices", value, _SHAPE)
    return {_model_name(name): _price(name, entry) for name, entry in value.items()}


def _model_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise PriceError("prices", name, "model names that are non-empty strings")
    return name.strip()


def _price(model: str, entry: Any) -> Price:
    if isinstance(entry, Price):
        return entry
    where = f"prices.{model}"
    if not isinstance(entry, Mapping):
        raise PriceError(where, entry, "a mapping {input: X, output: Y, cached_input: Z} (USD per 1M tokens)")
    unknown = [k for k in entry if k not in _FIELDS]
    if unknown:
        raise PriceError(f"{where}.{unknown[0]}", entry[unknown[0]], f"only the keys {', '.join(_FIELDS)}")
    missing = [k for k in ("input", "output") if k not in entry]
    if missing:
        raise PriceError(
            f"{where}.{missing[0]}", None, "a number >= 0 (USD per 1M tokens); input and output are required"
        )
    numbers = {
        k: _amount(f"{where}.{k}", v) for k, v in entry.items() if not (k == "cached_input" and v is None)
    }
    return Price(**numbers)


def _amount(where: str, value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise PriceError(where, value, "a number >= 0 (USD per 1M tokens)") from None
    if not _is_amount(value):
        raise PriceError(where, value, "a number >= 0 (USD per 1M tokens)")
    return float(value)


def format_usd(amount: float | None, missing: str = "—") -> str:
    """Dollars with two significant digits below a cent, cents above; ``missing`` for no cost.

    Example:
        >>> format_usd(0.0000072), format_usd(0.01234), format_usd(1234.5), format_usd(None)
        ('$0.0000072', '$0.0123', '$1,234.50', '—')
    """
    if amount is None:
        return missing
    if amount == 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    if amount >= 0.01:
        return f"${amount:.4f}"
    if amount < 1e-10:
        return "<$0.0000000001"
    return f"${amount:.{1 - math.floor(math.log10(amount))}f}"


def price_hint(models: Sequence[str]) -> str:
    """What to do about models that have no price, said once per report.

    Example:
        >>> print(price_hint(["llama-3"]))  # doctest: +NORMALIZE_WHITESPACE
        no price for llama-3; add one under prices: in tracesim.yaml (USD per 1M tokens),
        e.g. prices: {llama-3: {input: 0.15, output: 0.6}}
    """
    example = models[0] if models else "my-model"
    return (
        f"no price for {', '.join(models)}; add one under prices: in tracesim.yaml (USD per 1M tokens), "
        f"e.g. prices: {{{example}: {{input: 0.15, output: 0.6}}}}"
    )


def has_usage(attributes: Mapping[str, Any]) -> bool:
    """Whether a span reports an input or output token count, in any convention.

    Example:
        >>> has_usage({"llm.token_count.prompt": 12}), has_usage({"input.value": "hi"})
        (True, False)
    """
    return (
        not USAGE_KEYS.isdisjoint(attributes)
        and attributes.get(LLM_COUNTED_IN_PARENT) is not True
        and LLM_TWIN_OF not in attributes
    )
