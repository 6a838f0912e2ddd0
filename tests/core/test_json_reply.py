"""Finding the JSON a model answered with: plain, fenced or inside prose."""

from __future__ import annotations

import pytest

from harness.core.json_reply import find_json


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('  {"score": 9}  ', {"score": 9}),
        ("[1, 2]", [1, 2]),
        ('Here:\n```json\n{"score": 7}\n```\nthanks', {"score": 7}),
        ('```JSON {"score": 6}```', {"score": 6}),
        ('```\n{"score": 5}\n```', {"score": 5}),
        ('```\nnot json\n```\n```json\n{"score": 4}\n```', {"score": 4}),
        ('I think {"score": 3, "fixes": ["a {b}"]} is fair', {"score": 3, "fixes": ["a {b}"]}),
        ('{broken {"score": 2}', {"score": 2}),
        ('[1, 2] and then {"score": 1}', {"score": 1}),
        ('"a string" {"score": 0}', {"score": 0}),
    ],
)
def test_the_first_json_value_is_found_wherever_the_reply_puts_it(text: str, found: object) -> None:
    assert find_json(text) == found


def test_a_fenced_block_is_read_before_prose_around_it() -> None:
    text = 'Draft {"score": 1} rejected.\n```json\n{"score": 8}\n```'
    assert find_json(text) == {"score": 8}


def test_a_reply_without_an_object_is_an_error_that_says_which() -> None:
    with pytest.raises(ValueError, match="^no JSON object found in the reply$"):
        find_json("I would give it a 7. [1, 2")
    with pytest.raises(ValueError, match="^no JSON object found in the reply$"):
        find_json("see [1, 2] or {nothing}")
    for empty in ("", "  \n\t"):
        with pytest.raises(ValueError, match="^the reply is empty$"):
            find_json(empty)
