from decimal import Decimal

import pytest

from invoicing.money import allocate, format_amount, parse_amount, percent_of


@pytest.mark.parametrize(
    ("text", "cents"),
    [("12", 1200), ("12.5", 1250), ("12.05", 1205), ("1,234.50", 123450), ("-3", -300)],
)
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


@pytest.mark.parametrize("text", ["", "12.345", "1,23", "abc", "12,34.00"])
def test_parse_amount_rejects_malformed_text(text):
    with pytest.raises(ValueError, match="not an amount"):
        parse_amount(text)


def test_format_amount():
    assert format_amount(123450) == "EUR 1,234.50"
    assert format_amount(5, "GBP") == "GBP 0.05"


def test_format_negative_amount():
    assert format_amount(-300) == "-EUR 3.00"


def test_percent_rounds_half_up():
    assert percent_of(1, 50) == 1
    assert percent_of(1250, Decimal("20")) == 250
    assert percent_of(333, "7.5") == 25


def test_percent_of_a_credit_rounds_away_from_zero():
    assert percent_of(-1, 50) == -1


def test_allocate_adds_up_exactly():
    shares = allocate(1000, 3)
    assert shares == [334, 333, 333]
    assert sum(shares) == 1000


def test_allocate_into_one_part():
    assert allocate(999, 1) == [999]


def test_allocate_needs_a_part():
    with pytest.raises(ValueError, match="at least 1"):
        allocate(100, 0)
