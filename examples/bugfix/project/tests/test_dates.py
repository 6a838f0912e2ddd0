from datetime import date

import pytest

from invoicing.dates import DateRange, add_business_days, month


def test_range_contains_a_day_in_the_middle():
    assert date(2024, 3, 15) in DateRange(date(2024, 3, 1), date(2024, 3, 31))


def test_range_contains_both_ends():
    period = DateRange(date(2024, 3, 1), date(2024, 3, 31))
    assert date(2024, 3, 1) in period
    assert date(2024, 3, 31) in period


def test_range_excludes_the_days_around_it():
    period = DateRange(date(2024, 3, 1), date(2024, 3, 31))
    assert date(2024, 2, 29) not in period
    assert date(2024, 4, 1) not in period


def test_a_one_day_range_holds_that_day():
    day = date(2024, 6, 30)
    assert day in DateRange(day, day)
    assert len(DateRange(day, day)) == 1


def test_range_must_not_end_before_it_starts():
    with pytest.raises(ValueError, match="before it starts"):
        DateRange(date(2024, 3, 2), date(2024, 3, 1))


def test_overlapping_ranges():
    first = DateRange(date(2024, 1, 1), date(2024, 1, 31))
    assert first.overlaps(DateRange(date(2024, 1, 31), date(2024, 2, 10)))
    assert not first.overlaps(DateRange(date(2024, 2, 1), date(2024, 2, 10)))


@pytest.mark.parametrize(
    ("year", "number", "days"), [(2024, 1, 31), (2024, 2, 29), (2023, 2, 28), (2024, 4, 30)]
)
def test_month_has_its_number_of_days(year, number, days):
    assert len(month(year, number)) == days


def test_month_ends_on_its_last_day():
    assert month(2024, 12) == DateRange(date(2024, 12, 1), date(2024, 12, 31))


def test_iterating_a_month_gives_every_day_once():
    days = list(month(2024, 2))
    assert days[0] == date(2024, 2, 1)
    assert days[-1] == date(2024, 2, 29)
    assert len(set(days)) == 29


def test_business_days_skip_the_weekend():
    friday = date(2024, 3, 8)
    assert add_business_days(friday, 1) == date(2024, 3, 11)
    assert add_business_days(friday, 5) == date(2024, 3, 15)


def test_zero_business_days_is_the_same_day():
    assert add_business_days(date(2024, 3, 9), 0) == date(2024, 3, 9)
