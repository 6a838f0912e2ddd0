from datetime import date
from decimal import Decimal

import pytest

from invoicing.invoice import Invoice, LineItem


def make_invoice(**changes):
    fields = {
        "number": "2024-001",
        "customer": "Harbour Café",
        "issued": date(2024, 1, 10),
        "lines": (LineItem("Beans, 5 kg", 2, 4_250), LineItem("Delivery", 1, 1_500)),
    }
    return Invoice(**{**fields, **changes})


def test_line_amount():
    assert LineItem("Filters", 3, 199).amount == 597


def test_line_needs_a_quantity():
    with pytest.raises(ValueError, match="quantity"):
        LineItem("Filters", 0, 199)


def test_line_price_must_not_be_negative():
    with pytest.raises(ValueError, match="unit price"):
        LineItem("Filters", 1, -1)


def test_subtotal_tax_and_total():
    invoice = make_invoice()
    assert invoice.subtotal == 10_000
    assert invoice.tax == 2_000
    assert invoice.total == 12_000


def test_reduced_tax_rate():
    assert make_invoice(tax_rate=Decimal("5.5")).tax == 550


def test_due_date_follows_the_terms():
    assert make_invoice(terms_days=14).due == date(2024, 1, 24)


def test_payment_on_the_due_date_is_on_time():
    invoice = make_invoice()
    assert invoice.due in invoice.payment_window
    assert not invoice.is_overdue(invoice.due)


def test_overdue_the_day_after_the_due_date():
    invoice = make_invoice()
    assert invoice.is_overdue(date(2024, 2, 10))
