"""Text made inert for a terminal: escape sequences and control characters out, words kept."""

from __future__ import annotations

import tomllib

import pytest

from harness.core.text import inert, toml_value

CLEAR = "\x1b[2J\x1b[H"
FAKE_PASS = "\x1b[1;32mPASSED\x1b[0m"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # OSC 52: write the clipboard
ATTACK = f"{CLEAR}all good {FAKE_PASS}{CLIPBOARD}\r\x9b2Jdone"
"""What an agent's text may carry: every piece must come out as plain characters."""


def test_the_sequences_come_out_inert_and_the_words_stay() -> None:
    assert inert(ATTACK) == "all good PASSED2Jdone"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b]52;c;Y3VybA==\x1b\\after", "after"),  # OSC ended by ST
        ("\x1b]0;title\nnext line", "\nnext line"),  # unterminated: cut at the line's end
        ("\x1bPpayload\x1b\\x", "x"),  # DCS
        ("a\x1b7b\x1b8c\x1bcd", "abcd"),  # save/restore cursor, full reset
        ("bell\x07 nul\x00 del\x7f c1\x85\x9d", "bell nul del c1"),
        ("keep\ttabs\nand lines", "keep\ttabs\nand lines"),
        ("é, 日本, emoji 🙂", "é, 日本, emoji 🙂"),
    ],
)
def test_each_kind_of_control_is_taken_out(text: str, expected: str) -> None:
    assert inert(text) == expected


def test_one_line_text_turns_tabs_and_newlines_into_spaces() -> None:
    assert inert("a\tb\nc\x1b[31m", multiline=False) == "a b c"


@pytest.mark.parametrize(
    "value",
    ['a "quoted" \\ path', "two\nlines\tand \x00 \x1f \x7f", "é 😀 \u2028", "", True, False, 0, 7],
)
def test_a_toml_value_reads_back_as_itself(value: str | bool | int) -> None:
    written = toml_value(value)
    assert tomllib.loads(f"v = {written}") == {"v": value}
    assert type(tomllib.loads(f"v = {written}")["v"]) is type(value)
    assert not {"\x7f", "\n"} & set(written)  # raw, either would break the file
