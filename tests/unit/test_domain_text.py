"""The one tokenizer (indexing and querying) and the content hash."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from domain.text import MAX_TOKEN_CHARS, content_hash, term_frequencies, tokenize


def test_english_is_lowercased_stemmed_and_stopworded():
    assert tokenize("The Runners were RUNNING quickly to the stations") == ["runner", "run", "quick", "station"]


def test_index_and_query_forms_meet_on_the_same_stem():
    # A query in another inflection must hit the same term as the indexed text.
    assert set(tokenize("she moved to Lisbon")) & set(tokenize("moving to lisbon"))
    assert tokenize("connections") == tokenize("connection") == tokenize("connected") == ["connect"]


def test_stopwords_only_yield_nothing():
    assert tokenize("the and of it is was to be") == []
    assert tokenize("Don't") == []  # don + t, both stopwords


def test_repeats_are_kept_and_counted():
    assert tokenize("cat cat dog") == ["cat", "cat", "dog"]
    assert term_frequencies("cat cats Cat dog") == Counter({"cat": 3, "dog": 1})


def test_chinese_is_split_into_overlapping_bigrams():
    assert tokenize("我喜欢北京") == ["我喜", "喜欢", "欢北", "北京"]
    # A Chinese query for "Beijing" matches the indexed text.
    assert set(tokenize("北京")) <= set(tokenize("我喜欢北京"))
    assert tokenize("北") == ["北"]  # a single CJK character stays a term


def test_japanese_kanji_and_kana_are_split_into_bigrams():
    doc = tokenize("東京に住んでいます。")
    assert doc == ["東京", "京に", "に住", "住ん", "んで", "でい", "いま", "ます"]
    assert set(tokenize("東京")) <= set(doc)
    # Katakana too, and half-width katakana is normalised (NFKC) to the same terms.
    assert tokenize("カタカナ") == ["カタ", "タカ", "カナ"]
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ")


def test_mixed_latin_and_cjk_keep_text_order():
    assert tokenize("Alice住在北京") == ["alic", "住在", "在北", "北京"]
    assert tokenize("北京Alice") == ["北京", "alic"]
    assert tokenize("2024年 meeting 会议") == ["2024", "年", "meet", "会议"]


def test_full_width_forms_are_normalised():
    assert tokenize("ＡＢＣ１２３") == tokenize("abc123") == ["abc123"]


@pytest.mark.parametrize("text", [
    "😀🎉🙂",
    "👩‍👩‍👧‍👦 family 🇵🇹",
    "'; DROP TABLE events; --",
    "%_\\ ' \" ` $$ $1 :param ? * ( ) [ ] { } | & ! ~ < > = @@ ->> ::text",
    "\x00\x01 nul and control",
    "a_b-c.d/e",
    "",
    "   \n\t ",
])
def test_emoji_sql_metacharacters_and_noise_do_not_crash(text):
    terms = tokenize(text)
    assert isinstance(terms, list)
    assert all(isinstance(t, str) and t for t in terms)
    # Nothing but word characters survive: no quote, semicolon, percent or emoji becomes a term.
    assert all(ch.isalnum() for t in terms for ch in t)


def test_sql_metacharacters_leave_only_words():
    assert tokenize("'; DROP TABLE events; --") == ["drop", "tabl", "event"]
    assert tokenize("😀 hello 🙂") == ["hello"]


def test_overlong_tokens_are_dropped():
    assert tokenize("x" * (MAX_TOKEN_CHARS + 1)) == []
    assert tokenize("y" * MAX_TOKEN_CHARS) != []


def test_content_hash_is_sha256_of_utf8():
    for text in ["Alice moved to Lisbon", "我喜欢北京", "😀", ""]:
        digest = content_hash(text)
        assert digest == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
    assert content_hash("a") != content_hash("A")
    assert content_hash("Alice") == content_hash("Alice")
