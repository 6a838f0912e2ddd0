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
    assert [memo.of("ab"), memo.of("ab"), memo.of("cd"), memo.of("ab")] == ["AB", "AB", "CD", "AB"]
    assert derived == ["ab", "cd"]


def test_the_bound_counts_characters_and_forgets_the_oldest_first() -> None:
    derived: list[str] = []
    memo = _counting(derived)
    texts = [c * 100 for c in "abcdefghij"]  # each entry: 100 + 100 + ENTRY_CHARS characters
    for text in texts:
        memo.of(text)
    per_entry = 200 + ENTRY_CHARS
    assert len(memo) == 2_000 // per_entry == 7
    assert memo.chars == 7 * per_entry <= memo.max_chars
    derived.clear()
    memo.of(texts[-1])
    memo.of(texts[-7])
    assert derived == []  # the latest seven are still there
    memo.of(texts[2])
    assert derived == [texts[2]]  # older ones were forgotten, and are derived again


def test_a_text_derived_as_itself_is_counted_once() -> None:
    memo = TextMemo(lambda text: text, max_chars=1_000)
    memo.of("x" * 100)
    assert memo.chars == 100 + ENTRY_CHARS


@pytest.mark.parametrize(("length", "kept"), [(250 - ENTRY_CHARS, 1), (251 - ENTRY_CHARS, 0)])
def test_a_text_over_a_quarter_of_the_bound_is_not_kept(length: int, kept: int) -> None:
    memo = TextMemo(lambda text: text, max_chars=1_000)
    assert memo.of("y" * length) == "y" * length
    assert len(memo) == kept


def test_many_short_texts_fill_it_too() -> None:
    memo = TextMemo(lambda text: text, max_chars=10 * (1 + ENTRY_CHARS))
    for n in range(1_000):
        memo.of(str(n % 10) if n < 10 else f"{n}")
    assert len(memo) <= 10
    assert memo.chars <= memo.max_chars


def test_after_turning_over_many_times_it_still_forgets_the_oldest_first() -> None:
    derived: list[str] = []
    memo = _counting(derived)  # seven entries of 200 characters each
    texts = [f"{n:0100d}" for n in range(1_000)]
    for text in texts:
        memo.of(text)
    assert len(memo) == 7
    derived.clear()
    for text in texts[-7:]:
        memo.of(text)
    assert derived == []  # the latest seven are the ones held
    memo.of(texts[-8])
    assert derived == [texts[-8]]  # the one before them was forgotten
