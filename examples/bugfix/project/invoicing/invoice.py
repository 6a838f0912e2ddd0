"""Invoices: lines, tax, total and when payment is due."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from invoicing.dates import DateRange
from invoicing.money import percent_of


@dataclass(frozen=True)
class LineItem:
    """``quantity`` of something at ``unit_price`` cents each."""

    description: str
    quantity: int
    unit_price: int

    def __post_init__(self) -> None:
        if self.quantity < 1:
            raise ValueError(f"{self.description}: quantity must be at least 1")
        if self.unit_price < 0:
            raise ValueError(f"{self.description}: unit price must not be negative")

    @property
    def amount(self) -> int:
        return self.quantity * self.unit_price


@dataclass(frozen=True)
class Invoice:
    """One invoice to one customer; tax is charged on the subtotal."""

    number: str
    customer: str
    issued: date
    lines: tuple[LineItem, ...] = field(default_factory=tuple)
    tax_rate: Decimal = Decimal("20")
    terms_days: int = 30

    @property
    def subtotal(self) -> int:
        return sum(line.amount for line in self.lines)

    @property
    def tax(self) -> int:
        return percent_of(self.subtotal, self.tax_rate)

    @property
    def total(self) -> int:
        return self.subtotal + self.tax

    @property
    def due(self) -> date:
        return self.issued + timedelta(days=self.terms_days)

    @property
    def payment_window(self) -> DateRange:
        """The days on which a payment is on time."""
        return DateRange(self.issued, self.due)

    def is_overdue(self, on: date) -> bool:
        return on > self.due
