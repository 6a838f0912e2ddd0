"""Monthly statements and the list of overdue invoices."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from invoicing.dates import DateRange, month
from invoicing.invoice import Invoice


@dataclass(frozen=True)
class Statement:
    """The invoices issued in ``period``, oldest first."""

    period: DateRange
    invoices: tuple[Invoice, ...]

    @property
    def total(self) -> int:
        return sum(invoice.total for invoice in self.invoices)

    def by_customer(self) -> dict[str, int]:
        """Each customer's total for the period, customers in alphabetical order."""
        totals: dict[str, int] = {}
        for invoice in sorted(self.invoices, key=lambda i: i.customer):
            totals[invoice.customer] = totals.get(invoice.customer, 0) + invoice.total
        return totals


def monthly_statement(invoices: Iterable[Invoice], year: int, number: int) -> Statement:
    """The statement for calendar month ``number`` of ``year``."""
    period = month(year, number)
    issued = sorted(
        (invoice for invoice in invoices if invoice.issued in period),
        key=lambda invoice: (invoice.issued, invoice.number),
    )
    return Statement(period, tuple(issued))


def overdue(invoices: Iterable[Invoice], paid: Iterable[str], on: date) -> list[Invoice]:
    """Unpaid invoices whose payment window has closed by ``on``, most overdue first."""
    settled = set(paid)
    late = [i for i in invoices if i.number not in settled and i.is_overdue(on)]
    return sorted(late, key=lambda invoice: invoice.due)
