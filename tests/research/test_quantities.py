"""Figures read from a quote with the quantity each counts, and where two quotes differ."""

from __future__ import annotations

from decimal import Decimal

import pytest

from harness.research.quantities import differences, figures


def test_each_figure_is_read_with_its_value_and_quantity() -> None:
    quote = "120k rides, 1.2 million people, a $4.50 fare, a 40-station network and 12 per cent"
    assert [(f.text, f.value, f.quantity) for f in figures(quote)] == [
        ("120k rides", Decimal(120000), "ride"),
        ("1.2 million people", Decimal(1200000), "person"),
        ("$4.50", Decimal("4.5"), "$"),
        ("40-station", Decimal(40), "station"),
        ("12 per cent", Decimal(12), "percent"),
    ]


def test_a_number_followed_by_no_quantity_counts_nothing_named() -> None:
    quote = "first lit on 1 November 1851, rebuilt in 1880 and in the 19th century"
    assert [(f.text, f.quantity) for f in figures(quote)] == [
        ("1 November", "november"),
        ("1851", None),
        ("1880", None),
        ("19", None),
    ]


@pytest.mark.parametrize(
    ("first", "second", "found"),
    [
        ("recorded 120,000 rides across 40 stations", "recorded 130,000 rides across 40 stations",
         ["120,000 rides against 130,000 rides"]),
        ("a span of 142 m", "a span of 148 metres", ["142 m against 148 metres"]),
        ("opened in 1887", "opened in 1888", ["1887 against 1888"]),
        ("grew by 3%", "grew by 4 per cent", ["3% against 4 per cent"]),
        ("recorded 120,000 rides", "recorded 120000 rides", []),
        ("recorded 120,000 rides", "recorded 120k rides", []),
        ("recorded 120,000 rides", "across 40 stations", []),
        ("rose from 100 rides to 120 rides", "reached 120 rides", []),
        ("142 metres", "466 feet", []),
    ],
)  # fmt: skip
def test_quotes_differ_only_on_one_quantity_with_no_value_in_common(
    first: str, second: str, found: list[str]
) -> None:
    assert [d.describe() for d in differences(first, second)] == found
