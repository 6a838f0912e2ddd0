"""Date ranges with both ends included: billing periods and statement months."""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

SATURDAY = 5


@dataclass(frozen=True)
class DateRange:
    """The days from ``start`` to ``end``, both included."""

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"a range cannot end ({self.end}) before it starts ({self.start})")

    def __contains__(self, day: object) -> bool:
        if not isinstance(day, date):
            return False
        return self.start <= day < self.end

    def __len__(self) -> int:
        return (self.end - self.start).days + 1

    def __iter__(self) -> Iterator[date]:
        for offset in range(len(self)):
            yield self.start + timedelta(days=offset)

    def overlaps(self, other: DateRange) -> bool:
        """True when the two ranges share at least one day."""
        return self.start <= other.end and other.start <= self.end


def month(year: int, number: int) -> DateRange:
    """The calendar month ``number`` (1-12) of ``year``."""
    last_day = calendar.monthrange(year, number)[1]
    return DateRange(date(year, number, 1), date(year, number, last_day))


def add_business_days(start: date, days: int) -> date:
    """The date ``days`` working days (Monday to Friday) after ``start``."""
    if days < 0:
        raise ValueError(f"days must not be negative, got {days}")
    current = start
    while days:
        current += timedelta(days=1)
        if current.weekday() < SATURDAY:
            days -= 1
    return current
