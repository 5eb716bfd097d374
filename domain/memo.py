"""Memoised views of texts: what a pure function derives from a memory's content, kept by a digest of it.

Recall looks at the same memories' texts on query after query (their words for the entity boost, their terms
for the abstention gate, the recent ones for coreference); for a long text that derivation costs more than the
rest of a stage. A memory's content is immutable while it keeps its digest, so what a pure function answers
for it can be kept. Keys are digests, not the texts (a few KB each). Each memo is bounded both in entries and
in the characters of the texts its entries were derived from (a word set takes several times its text's
characters in bytes: the default 2M characters is some tens of MB at most), least recently used dropped
first. Values must be immutable (frozenset, tuple, str, bool): every caller shares them. Thread-safe: recall
runs in a thread pool.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_ALL: list[Memo[Any]] = []  # every memo made, for clear_all


def digest(texts: Sequence[str]) -> bytes:
    """One digest of a sequence of texts (length-prefixed, so ("ab", "c") and ("a", "bc") differ)."""
    h = hashlib.blake2b(digest_size=16)
    for part in texts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class Memo(Generic[T]):
    """A bounded LRU map from a digest of texts to what was computed from them."""

    def __init__(self, maxsize: int = 8192, max_chars: int = 2_000_000) -> None:
        self.maxsize, self.max_chars = maxsize, max_chars
        self._entries: OrderedDict[bytes, tuple[T, int]] = OrderedDict()  # digest -> (value, characters)
        self._chars = 0
        self._lock = threading.Lock()
        _ALL.append(self)

    def get(self, texts: Sequence[str], compute: Callable[[], T]) -> T:
        key = digest(texts)
        found = self._kept(key)
        if found:
            return found[0]
        value = compute()  # outside the lock: two threads may compute the same value, both right
        chars = sum(len(t) for t in texts)
        if chars > self.max_chars:
            return value  # larger than the whole memo: not kept
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, chars)
                self._chars += chars
            while len(self._entries) > self.maxsize or self._chars > self.max_chars:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._chars -= dropped
        return value

    def peek(self, texts: Sequence[str]) -> T | None:
        """What is kept for `texts`, or None (nothing computed)."""
        found = self._kept(digest(texts))
        return found[0] if found else None

    def _kept(self, key: bytes) -> tuple[T] | None:
        """(the value kept for `key`,), now the most recently used; None when none is kept."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return (self._entries[key][0],)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0


def per_text(maxsize: int = 8192, max_chars: int = 2_000_000) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Decorator: memoise a pure function of one text by the text's digest (`fn.memo` is its Memo)."""

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        memo: Memo[T] = Memo(maxsize, max_chars)

        @wraps(fn)
        def wrapper(text: str) -> T:
            return memo.get((text,), lambda: fn(text))

        wrapper.memo = memo  # type: ignore[attr-defined]  # a function attribute: Callable declares none
        return wrapper

    return decorate


def clear_all() -> None:
    """Empty every memo (a benchmark measuring the uncached cost; nothing else needs it)."""
    for memo in _ALL:
        memo.clear()
