"""How big a value is, found in a bounded number of steps: whether it is serialised in one C call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any

from tracesim._capture._convert import _SMALL_NODES, _plain


def is_small(value: Any, chars: int, nodes: int = _SMALL_NODES) -> bool:
    """Whether ``value`` has at most ``nodes`` nodes and ``chars`` characters of text.

    Stops as soon as the budget is spent, so a huge value costs a few hundred steps here.
    Objects it does not know count as one node (their conversion is bounded by the caller).

    Example:
        >>> is_small({"q": "short"}, 100), is_small(list(range(10_000)), 100)
        (True, False)
    """
    return _size(value, chars, nodes) != _LARGE


_LARGE, _ASCII, _TEXT = 0, 1, 2  # what _size finds: too large; small, all text ASCII; small


def _size(value: Any, chars: int, nodes: int = _SMALL_NODES) -> int:
    """`is_small`, telling small values whose strings are all ASCII (``_ASCII``) from the others."""
    ascii_only = True
    stack = [value]
    while stack:
        item = stack.pop()
        nodes -= 1
        if nodes < 0:
            return _LARGE
        kind = type(item)  # exact types first: the common JSON shapes skip the isinstance chain
        if kind is str:
            chars -= len(item)
            if chars < 0:
                return _LARGE
            if ascii_only and not item.isascii():  # isascii reads a flag: O(1)
                ascii_only = False
        elif kind is dict:
            if len(item) > nodes:
                return _LARGE
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            if len(item) > nodes:
                return _LARGE
            stack.extend(item)
        elif kind in _SCALARS:
            pass
        elif not _is_small_other(item, stack, nodes):
            return _LARGE
        elif isinstance(item, str):
            ascii_only = False  # a subclass: its text is what str() gives
            chars -= len(_plain(item))
            if chars < 0:
                return _LARGE
        elif isinstance(item, (bytes, bytearray)):
            chars -= len(item) * 2
            if chars < 0:
                return _LARGE
    return _ASCII if ascii_only else _TEXT


_SCALARS = frozenset({int, float, bool, type(None)})


def _is_small_other(item: Any, stack: list[Any], nodes: int) -> bool:
    """`is_small` for anything but the exact JSON types: push its children, False when too big."""
    if isinstance(item, (str, bytes, bytearray, int, float)) or item is None:
        return True  # counted by the caller (subclasses of str and bytes) or a single node
    if isinstance(item, Mapping):
        if len(item) > nodes:
            return False
        stack.extend(item.values())
    elif isinstance(item, (list, tuple, Set)):
        if len(item) > nodes:
            return False
        stack.extend(item)
    else:
        size = getattr(item, "size", None)  # numpy arrays, torch tensors have one
        if isinstance(size, int) and size > nodes:
            return False
        if hasattr(item, "model_fields") or dataclasses.is_dataclass(item):
            fields = getattr(item, "__dict__", None)
            if isinstance(fields, dict):
                if len(fields) > nodes:
                    return False
                stack.extend(fields.values())
    return True
