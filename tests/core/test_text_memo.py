"""TextMemo: each text derived once while it is remembered, and never more held than its bound."""

from __future__ import annotations

import pytest

from harness.core.text_memo import ENTRY_CHARS, TextMemo


def _counting(derived: list[str]) -> TextMemo:
    def derive(text: str) -> str:
        derived.append(text)
        return text.upper()

    return TextMemo(derive, max_chars=2_000)


def test_a_text_asked_again_is_derived_once() -> None:
    derived: list[str] = []
    memo = _counting(derived)
    assert [memo("ab"), memo("ab"), memo("cd"), memo("ab")] == ["AB", "AB", "CD", "AB"]
    assert derived == ["ab", "cd"]


def test_the_bound_counts_characters_and_forgets_the_oldest_first() -> None:
    derived: list[str] = []
    memo = _counting(derived)
    texts = [c * 100 for c in "abcdefghij"]  # each entry: 100 + 100 + ENTRY_CHARS characters
    for text in texts:
        memo(text)
    per_entry = 200 + ENTRY_CHARS
    assert len(memo) == 2_000 // per_entry == 7
    assert memo.chars == 7 * per_entry <= memo.max_chars
    derived.clear()
    memo(texts[-1])
    memo(texts[-7])
    assert derived == []  # the latest seven are still there
    memo(texts[2])
    assert derived == [texts[2]]  # older ones were forgotten, and are derived again


def test_a_text_derived_as_itself_is_counted_once() -> None:
    memo = TextMemo(lambda text: text, max_chars=1_000)
    memo("x" * 100)
    assert memo.chars == 100 + ENTRY_CHARS


@pytest.mark.parametrize(("length", "kept"), [(250 - ENTRY_CHARS, 1), (251 - ENTRY_CHARS, 0)])
def test_a_text_over_a_quarter_of_the_bound_is_not_kept(length: int, kept: int) -> None:
    memo = TextMemo(lambda text: text, max_chars=1_000)
    assert memo("y" * length) == "y" * length
    assert len(memo) == kept


def test_many_short_texts_fill_it_too() -> None:
    memo = TextMemo(lambda text: text, max_chars=10 * (1 + ENTRY_CHARS))
    for n in range(1_000):
        memo(str(n % 10) if n < 10 else f"{n}")
    assert len(memo) <= 10
    assert memo.chars <= memo.max_chars
