"""domain.memo: what a pure function derives from a text, kept by the text's digest (bounded, least recently
used dropped first), and the entity rule's memoised views answering what they answered before."""

from __future__ import annotations

from domain.entities import addresses_other, words
from domain.memo import Memo, clear_all, digest, per_text


def test_per_text_computes_once_per_distinct_text() -> None:
    calls: list[str] = []

    @per_text(maxsize=8)
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert upper("abc") == "ABC" and upper("abc") == "ABC" and upper("abd") == "ABD"
    assert calls == ["abc", "abd"]
    assert upper("".join(["a", "b", "c"])) == "ABC" and calls == ["abc", "abd"]  # an equal text, not the same object


def test_memo_is_bounded_least_recently_used_first() -> None:
    memo: Memo[int] = Memo(maxsize=2)
    computed: list[str] = []

    def get(text: str) -> int:
        return memo.get((text,), lambda: computed.append(text) or len(text))

    get("a"), get("bb"), get("a"), get("ccc")  # "bb" is the least recently used when "ccc" arrives
    assert len(memo) == 2 and computed == ["a", "bb", "ccc"]
    get("a")
    get("bb")
    assert computed == ["a", "bb", "ccc", "bb"]


def test_memo_is_bounded_by_the_characters_it_was_derived_from() -> None:
    memo: Memo[int] = Memo(maxsize=100, max_chars=10)
    memo.get(("aaaa",), lambda: 1)
    memo.get(("bbbb",), lambda: 2)
    memo.get(("cccc",), lambda: 3)  # 12 characters: the least recently used goes
    assert len(memo) == 2 and memo.get(("aaaa",), lambda: 9) == 9
    memo.get(("x" * 11,), lambda: 4)  # larger than the whole memo: answered, not kept
    assert memo.get(("x" * 11,), lambda: 5) == 5


def test_digest_tells_sequences_apart() -> None:
    assert digest(("ab", "c")) != digest(("a", "bc"))
    assert digest(("ab",)) != digest(("a", "b")) and digest(()) != digest(("",))
    assert digest(("\udc80",)) != digest(("",))  # a lone surrogate is digested, not refused


def test_clear_all_empties_every_memo() -> None:
    memo: Memo[int] = Memo()
    memo.get(("x",), lambda: 1)
    words("Oliver hid his bone")
    clear_all()
    assert len(memo) == 0 and len(words.memo) == 0  # type: ignore[attr-defined]


def test_memoised_entity_views_answer_as_before() -> None:
    text = "Melanie: you said Oliver's bone was under Caroline's bed, didn't you?"
    first = words(text)
    assert first == {"melanie", "you", "said", "oliver", "bone", "was", "under", "caroline", "bed", "didn't"}
    assert isinstance(first, frozenset) and words(text) is first  # shared: immutable
    assert addresses_other(text) and addresses_other(text)
    assert not addresses_other("Caroline: I took my kids to the lake, you would love it")


def test_peek_answers_what_is_kept_and_computes_nothing() -> None:
    memo: Memo[int] = Memo(maxsize=2)
    assert memo.peek(("a",)) is None and len(memo) == 0
    memo.get(("a",), lambda: 1)
    memo.get(("b",), lambda: 2)
    assert memo.peek(("a",)) == 1  # and "a" is now the most recently used
    memo.get(("c",), lambda: 3)
    assert memo.peek(("b",)) is None and memo.peek(("a",)) == 1
