"""Turn an invoice's lines of positioned cells into invoice.extract output.

Lines arrive split into positioned cells (`_invoice_layout`); the reader then
works like a clerk:

- header fields from their labels ("Invoice No.:", "Number:", "Due date"),
  the value in the rest of the cell, the next cell, or the cell below it;
- the parties from their labels ("From", "Bill to") or, for the vendor, the
  letterhead: the first plain text of page 1;
- the line items (`_invoice_table`) and the totals (`_invoice_amounts`),
  reconciled so that what is missing is derived from what is there.

Heuristic by nature, honest about it: docs/capabilities.md lists what it gets
wrong. Patterns are RE2 (linear time) because the text is the caller's.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import re2

from examples.agents._invoice_amounts import read_totals, reconcile
from examples.agents._invoice_layout import ID_WORD, TAX_ID, Line, rx
from examples.agents._invoice_table import read_table
from examples.agents._invoice_values import (
    DateOrder,
    detect_currency,
    detect_date_order,
    detect_number_style,
    find_dates,
    parse_date,
)

__all__ = ["extract_invoice"]

# Header labels: the value follows in group 1 (maybe empty).
_NUMBER_LABEL = rx(
    r"^(?:tax\s+)?(?:invoice|inv\.?|bill|document)\s*(?:no\.?|number|nr\.?|num\.?|#|id)"
    r"\s*[:.#]?\s*(.*)$"
)
# Inside a longer cell ("Supplier invoice no.: 123"), but not in running text
# ("please quote the invoice number as ..."): the label ends the cell or a colon follows.
_NUMBER_LABEL_LOOSE = rx(r"\binvoice\s*(?:no\.?|number|nr\.?|#)\s*(?:[:#]\s*(.*))?$")
_INVOICE_COLON = rx(r"^invoice\s*:\s*(.*)$")
# A bare "Number:" (or "No.", "#") on an invoice is the invoice's number: tried last.
_NUMBER_BARE = rx(r"^(?:number\b|no\b\.?|nr\b\.?|#)\s*[:.#]?\s*(.*)$")
_INVOICE_BARE = rx(r"^invoice()$")  # a label cell "Invoice" over or before its number
_DATE_LABEL = rx(
    r"^(?:invoice\s+date|date\s+of\s+(?:issue|invoice)|issue\s+date|issued(?:\s+on)?|"
    r"billing\s+date|invoice\s+dated|tax\s+point)\s*[:.]?\s*(.*)$"
)
_DATE_LABEL_LOOSE = rx(r"^date\s*[:.]?\s*(.*)$")
_DUE_LABEL = rx(
    r"^(?:due\s+date|payment\s+due(?:\s+date)?|date\s+due|due(?:\s+on|\s+by)?|"
    r"pay(?:able)?\s+by|please\s+pay\s+by)\s*[:.]?\s*(.*)$"
)
# "Net 30", "within 14 days", "in 30 d", "30 days net"; group 3 is set when the digits
# go on as an amount ("Total net 3,078.08"), which is no term.
_TERMS = rx(
    r"\b(?:net|within|in)\s+(\d{1,3})\s*(?:days?|d)\b|\b(\d{1,3})\s*days?\s+net\b|"
    r"\bnet\s*(\d{1,3})([.,]\d)?"
)
_TERMS_CONTEXT = rx(r"\b(?:pay|payment|payable|terms|due|net)\b")
_ON_RECEIPT = rx(r"\b(?:due|payable)\s+(?:up)?on\s+receipt\b")
_UPON_RECEIPT = rx(r"^(?:(?:up)?on\s+)?receipt\b")
_CURRENCY_LABEL = rx(r"^currency\s*[:.]?\s*(.*)$")
_CUSTOMER_LABEL = rx(
    r"^(?:bill(?:ed)?\s+to|invoice(?:d)?\s+to|sold\s+to|customer|client|buyer|recipient)\b"
    r"\s*[:.]?\s*(.*)$"
)
_VENDOR_LABEL = rx(r"^(?:from|vendor|supplier|seller|issued\s+by|sold\s+by)\b\s*[:.]?\s*(.*)$")
_EMAIL = re2.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_TITLE_WORDS = rx(r"^(?:tax\s+)?(?:invoice|facture|rechnung|factura|bill|receipt)\b")
_ID_TOKEN = re2.compile(r"^[A-Za-z0-9][A-Za-z0-9/._#-]*$")
# "Invoice INV-2024-3263" or "INVOICE 2024-0042" in a running title: the identifier
# after the word, or the whole token when the word is its prefix ("INV-2024-3263").
_ID_FALLBACK = rx(r"\binvoice[ \t]*[:#]?[ \t]*([A-Z0-9][A-Z0-9/-]*\d[A-Z0-9/-]*)\b")
_ID_PREFIXED = rx(r"\b(inv[-/#]?\d[A-Z0-9/-]*)\b")


def extract_invoice(lines: list[Line]) -> dict[str, Any]:
    """The invoice.extract output for the lines of one invoice, all pages in order."""
    text = "\n".join(line.text for line in lines)
    style = detect_number_style(text)
    currency_label = _labelled(lines, [_CURRENCY_LABEL], lambda v: v if v.strip() else None)
    currency = detect_currency(text, currency_label, style)
    order = detect_date_order(text, default_day_first=currency != "USD")

    items = read_table(lines, style)
    totals = read_totals(lines, style)
    invoice_date: dt.date | None = _labelled(lines, [_DATE_LABEL], lambda v: parse_date(v, order))
    if invoice_date is None:
        invoice_date = _labelled(lines, [_DATE_LABEL_LOOSE], lambda v: parse_date(v, order))
    if invoice_date is None:
        first_page = "\n".join(line.text for line in lines if line.page == 0)
        dates = find_dates(first_page, order)
        invoice_date = dates[0][1] if dates else None

    def due(value: str) -> dt.date | None:
        if invoice_date is not None and _UPON_RECEIPT.search(value):
            return invoice_date  # "Payment due upon receipt"
        return parse_date(value, order)

    due_date = _labelled(lines, [_DUE_LABEL], due)
    if due_date is None and invoice_date is not None:
        due_date = _due_from_terms(lines, invoice_date)

    output: dict[str, Any] = {
        "invoice_number": _invoice_number(lines, text),
        "invoice_date": (invoice_date or dt.date(1970, 1, 1)).isoformat(),
        "due_date": None if due_date is None else due_date.isoformat(),
        "currency": currency,
        "vendor": _vendor(lines),
        "customer": _customer(lines),
    }
    output.update(reconcile(totals, items))
    output["line_items"] = [
        {
            "sku": item.sku,
            "description": " ".join([item.description, *item.extra_lines]).strip(),
            "quantity": item.quantity,
            "unit_price": item.unit_price,
            "amount": item.amount,
        }
        for item in items
    ]
    return output


# -- header fields ---------------------------------------------------------


def _values_after(lines: list[Line], index: int, cell_index: int, rest: str) -> list[str]:
    """Candidate values for a label: the rest of its cell, the next cell, the cell below.

    "Below" is the nearest line under the label, within three lines' height,
    with a cell that overlaps the label's width (labels above values).
    """
    line = lines[index]
    candidates = [rest.strip()] if rest.strip() else []
    if cell_index + 1 < len(line.cells):
        candidates.append(line.cells[cell_index + 1].text)
    label = line.cells[cell_index]
    for below in lines[index + 1 :]:
        if below.page != line.page or line.y - below.y > 3.5 * label.size:
            break
        cell = next(
            (
                c
                for c in below.cells
                if c.start <= label.end + label.size and c.end >= label.start - label.size
            ),
            None,
        )
        if cell is not None:
            candidates.append(cell.text)
            break
    return candidates


def _labelled(lines: list[Line], patterns: list[Any], parse: Any) -> Any:
    """The first label match, in reading order, whose candidate value parses."""
    for pattern in patterns:
        for index, line in enumerate(lines):
            if line.used:
                continue
            for cell_index, cell in enumerate(line.cells):
                match = pattern.search(cell.text)
                if match is None:
                    continue
                for candidate in _values_after(lines, index, cell_index, match.group(1) or ""):
                    value = parse(candidate)
                    if value is not None:
                        return value
    return None


def _id_value(candidate: str) -> str | None:
    """The first identifier-like token (a digit in it, 3-60 characters) of a value, if no date."""
    if find_dates(candidate, DateOrder()):
        return None
    for token in candidate.split():
        token = token.strip(".,;:")
        if any(ch.isdigit() for ch in token) and 3 <= len(token) <= 60 and _ID_TOKEN.match(token):
            return token
    return None


def _invoice_number(lines: list[Line], text: str) -> str:
    found = _labelled(
        lines,
        [_NUMBER_LABEL, _INVOICE_COLON, _NUMBER_LABEL_LOOSE, _NUMBER_BARE, _INVOICE_BARE],
        _id_value,
    )
    if found is not None:
        return str(found)
    for pattern in (_ID_PREFIXED, _ID_FALLBACK):
        match = pattern.search(text)
        if match:
            return str(match.group(1))
    return "unknown"


def _due_from_terms(lines: list[Line], issued: dt.date) -> dt.date | None:
    for line in lines:
        text = line.text
        if not _TERMS_CONTEXT.search(text):
            continue
        if _ON_RECEIPT.search(text):
            return issued
        for match in _TERMS.finditer(text):
            if match.group(4):
                continue
            days = int(match.group(1) or match.group(2) or match.group(3))
            if 0 < days <= 365:
                return issued + dt.timedelta(days=days)
    return None


# -- parties -----------------------------------------------------------------


def _block_below(lines: list[Line], index: int, column: float, limit: int = 5) -> list[str]:
    """Text of the cells starting at `column` on the lines after `index`, up to a gap."""
    block: list[str] = []
    for line in lines[index + 1 :]:
        if not line.cells or line.page != lines[index].page or len(block) >= limit:
            break
        cell = next((c for c in line.cells if abs(c.start - column) <= 1.5 * c.size), None)
        if cell is None or _is_label(cell.text):
            break
        block.append(cell.text)
    return block


def _is_label(text: str) -> bool:
    return any(
        p.search(text)
        for p in (_NUMBER_LABEL, _DATE_LABEL, _DUE_LABEL, _CUSTOMER_LABEL, _VENDOR_LABEL)
    )


def _party(name: str, block: list[str]) -> dict[str, Any]:
    party: dict[str, Any] = {"name": name}
    address: list[str] = []
    for text in block:
        tax = TAX_ID.search(text)
        email = _EMAIL.search(text)
        if tax:
            party.setdefault("tax_id", tax.group(1).strip())
        elif email:
            party.setdefault("email", email.group(0))
        elif not text.lower().startswith(("tel", "phone", "fax", "www", "http", "iban")):
            address.append(text)
    if address:
        party["address"] = ", ".join(address)
    return party


def _labelled_party(lines: list[Line], pattern: Any) -> dict[str, Any] | None:
    for index, line in enumerate(lines):
        for cell in line.cells:
            match = pattern.search(cell.text)
            if match is None:
                continue
            rest = (match.group(1) or "").strip()
            if rest and ID_WORD.search(rest):
                continue  # "Customer no.: 4711" is not the customer's name
            block = _block_below(lines, index, cell.start)
            if rest:
                return _party(rest, block)
            if block:
                return _party(block[0], block[1:])
    return None


def _vendor(lines: list[Line]) -> dict[str, Any]:
    labelled = _labelled_party(lines, _VENDOR_LABEL)
    if labelled is not None:
        return labelled
    # The letterhead: the first plain text on the first page that is no title or label.
    for index, line in enumerate(lines[:15]):
        if line.page != 0 or not line.cells:
            continue
        cell = line.cells[0]
        text = cell.text
        if _TITLE_WORDS.search(text) or _is_label(text) or find_dates(text, DateOrder()):
            continue
        if not any(ch.isalpha() for ch in text):
            continue
        return _party(text, _block_below(lines, index, cell.start))
    return {"name": "unknown"}


def _customer(lines: list[Line]) -> dict[str, Any]:
    return _labelled_party(lines, _CUSTOMER_LABEL) or {"name": "unknown"}
