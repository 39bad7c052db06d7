"""How big a value is, found in a bounded number of steps: is it small enough to serialise in one C call?

It reads values and writes no text. `tracesim._capture._json_text` asks it which writer a value
takes; the compiled walk (``small`` of ``tracesim/_redact/_probe.c``) answers for values of the
exact JSON types, `_is_small_python` for the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any

from tracesim._capture._jsonable import exact_str

# A value with at most this many leaves and containers is serialised in one C call.
SMALL_NODES = 512


def is_small(value: Any, chars: int, nodes: int = SMALL_NODES) -> bool:
    """Whether ``value`` has at most ``nodes`` nodes and ``chars`` characters of text.

    Stops as soon as the budget is spent, so a huge value costs a few hundred steps here.
    Objects it does not know count as one node (their conversion is bounded by the caller).
    The compiled walk answers where it is built and knows every type in ``value``.

    Example:
        >>> is_small({"q": "short"}, 100), is_small(list(range(10_000)), 100)
        (True, False)
    """
    if _SMALL is not None:
        known = _SMALL(value, chars, nodes)
        if known is not None:
            return known  # type: ignore[no-any-return]
    return _is_small_python(value, chars, nodes)


def plain_small(value: Any, chars: int, nodes: int = SMALL_NODES) -> bool | None:
    """`is_small` when the compiled walk can answer, else None (another type in ``value``, or
    the module is not built). True then also says that ``value`` is a finite tree of the
    exact JSON types: no cycle, no object to convert, at most ``nodes`` deep.

    Example:
        >>> plain_small({"q": "short"}, 100) in (True, None), plain_small(object(), 100)
        (True, None)
    """
    if _SMALL is None:
        return None
    return _SMALL(value, chars, nodes)  # type: ignore[no-any-return]


def _is_small_python(value: Any, chars: int, nodes: int = SMALL_NODES) -> bool:
    """`is_small`: whether ``value`` has at most ``nodes`` nodes and ``chars`` characters of text.

    The items of a dict, list or tuple are read in the loop over it, and so are the items of
    the dicts among them: strings and numbers there cost a few steps each and never go on the
    stack. A chat history (a list of ``{"role", "content"}`` dicts) is read in one loop.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        nodes -= 1
        kind = type(item)  # exact types first: the common JSON shapes skip the isinstance chain
        if kind is dict or kind is list or kind is tuple:
            nodes -= len(item)
            if nodes < 0:
                return False
            for child in item.values() if kind is dict else item:
                kind = type(child)
                if kind is str:
                    chars -= len(child)
                elif kind is dict:  # a record (a chat message, say): its items read here too
                    nodes -= len(child)
                    if nodes < 0:
                        return False
                    for grandchild in child.values():
                        kind = type(grandchild)
                        if kind is str:
                            chars -= len(grandchild)
                        elif kind not in _SCALARS:
                            stack.append(grandchild)
                            nodes += 1  # counted again when it is read
                elif kind not in _SCALARS:
                    stack.append(child)
                    nodes += 1
            if chars < 0:
                return False
        elif kind is str:
            chars -= len(item)
            if chars < 0:
                return False
        elif nodes < 0:
            return False
        elif kind in _SCALARS:
            pass
        elif not _is_small_other(item, stack, nodes):
            return False
        elif isinstance(item, str):
            chars -= len(exact_str(item))  # a subclass: its text is what str() gives
            if chars < 0:
                return False
        elif isinstance(item, (bytes, bytearray)):
            chars -= len(item) * 2
            if chars < 0:
                return False
    return nodes >= 0


_SCALARS = frozenset({int, float, bool, type(None)})


def _compiled() -> Any:
    """``small`` of the compiled module (``_probe.c``): `_is_small_python` step for step, in C, for
    values of the exact JSON types (a 10 KB chat history: 116k -> 3k instructions); None when
    it is not built."""
    from tracesim._redact._native import load

    module = load()
    return getattr(module, "small", None) if module is not None else None


_SMALL = _compiled()


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
