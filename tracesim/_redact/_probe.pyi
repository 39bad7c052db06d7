# The compiled one-pass probe (_probe.c); see tracesim/_redact/_native.py.

class Probe:
    def __init__(
        self,
        groups: int,
        needles: tuple[tuple[str, int, int, bool, int, str, int, str, bool, int, bool], ...],
        names: tuple[tuple[str, int, int, bool], ...],
        skip_back: str,
        words: tuple[str, ...],
        /,
    ) -> None: ...
    def scan(self, text: str, /) -> tuple[tuple[int, ...], list[tuple[int, int, int]] | None] | None: ...
    def unchanged(
        self, values: dict[str, object], clean: dict[object, str], short: int, limit: int, /
    ) -> bool: ...
    def quiet(
        self,
        span: object,
        clean: dict[object, str],
        resources: dict[int, tuple[object, object]],
        short: int,
        limit: int,
        types: tuple[type, type, type],
        usage: tuple[str, ...],
        /,
    ) -> bool: ...

def small(value: object, chars: int, nodes: int, /) -> bool | None: ...

VERSION: int
