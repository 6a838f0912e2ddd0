"""Invoices, monthly statements and money amounts in integer cents."""

from invoicing.dates import DateRange, add_business_days, month
from invoicing.invoice import Invoice, LineItem
from invoicing.money import allocate, format_amount, parse_amount, percent_of
from invoicing.statement import Statement, monthly_statement, overdue

__all__ = [
    "DateRange",
    "Invoice",
    "LineItem",
    "Statement",
    "add_business_days",
    "allocate",
    "format_amount",
    "month",
    "monthly_statement",
    "overdue",
    "parse_amount",
    "percent_of",
]
