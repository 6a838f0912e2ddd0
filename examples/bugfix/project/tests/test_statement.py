from datetime import date

from invoicing.invoice import Invoice, LineItem
from invoicing.statement import monthly_statement, overdue


def invoice(number, customer, issued, cents):
    return Invoice(number, customer, issued, (LineItem("Services", 1, cents),))


INVOICES = [
    invoice("A-1", "Harbour Café", date(2024, 1, 2), 10_000),
    invoice("A-2", "Mill Bakery", date(2024, 1, 15), 5_000),
    invoice("A-3", "Harbour Café", date(2024, 1, 31), 2_500),
    invoice("A-4", "Mill Bakery", date(2024, 2, 1), 7_000),
    invoice("A-5", "Quay Books", date(2023, 12, 31), 4_000),
]


def test_statement_lists_the_months_invoices_oldest_first():
    statement = monthly_statement(INVOICES, 2024, 1)
    assert [i.number for i in statement.invoices] == ["A-1", "A-2", "A-3"]


def test_invoice_on_the_last_day_of_the_month_is_included():
    numbers = [i.number for i in monthly_statement(INVOICES, 2024, 1).invoices]
    assert "A-3" in numbers


def test_invoice_on_the_first_of_next_month_is_left_out():
    numbers = [i.number for i in monthly_statement(INVOICES, 2024, 1).invoices]
    assert "A-4" not in numbers


def test_december_statement_counts_new_years_eve():
    assert monthly_statement(INVOICES, 2023, 12).total == 4_800


def test_totals_by_customer():
    totals = monthly_statement(INVOICES, 2024, 1).by_customer()
    assert totals == {"Harbour Café": 15_000, "Mill Bakery": 6_000}


def test_a_month_without_invoices_is_empty():
    statement = monthly_statement(INVOICES, 2024, 3)
    assert statement.invoices == ()
    assert statement.total == 0


def test_overdue_leaves_out_paid_invoices():
    late = overdue(INVOICES, paid=["A-5"], on=date(2024, 3, 20))
    assert [i.number for i in late] == ["A-1", "A-2", "A-3", "A-4"]


def test_nothing_is_overdue_on_the_due_date():
    assert overdue(INVOICES[:1], paid=[], on=date(2024, 2, 1)) == []
