"""Turn an invoice's page texts (pypdf layout mode) into invoice.extract output.

Lines arrive split into positioned cells (`_invoice_layout`); the reader then
works like a clerk:

- header fields from their labels ("Invoice No.:", "Due date", "Bill to"),
  the value in the rest of the cell, the next cell, or the line below;
- the parties from their labels ("From", "Bill to") or, for the vendor, the
  letterhead: the first plain text of page 1;
- the line items and totals (`_invoice_amounts`), reconciled so that what is
  missing is derived from what is there.

Heuristic by nature, honest about it: docs/capabilities.md lists what it gets
wrong. Patterns are RE2 (linear time) because the text is the caller's.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import re2

from examples.agents._invoice_amounts import read_table, read_totals, reconcile
from examples.agents._invoice_layout import ID_WORD, TAX_ID, Line, rx, split_lines
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
_NUMBER_LABEL_LOOSE = rx(r"\binvoice\s*(?:no\.?|number|nr\.?|#)\s*[:.#]?\s*(.*)$")
_INVOICE_COLON = rx(r"^invoice\s*:\s*(.*)$")
_DATE_LABEL = rx(
    r"^(?:invoice\s+date|date\s+of\s+(?:issue|invoice)|issue\s+date|issued(?:\s+on)?|"
    r"billing\s+date|invoice\s+dated|tax\s+point)\s*[:.]?\s*(.*)$"
)
_DATE_LABEL_LOOSE = rx(r"^date\s*[:.]?\s*(.*)$")
_DUE_LABEL = rx(
    r"^(?:due\s+date|payment\s+due(?:\s+date)?|date\s+due|due(?:\s+on|\s+by)?|"
    r"pay(?:able)?\s+by|please\s+pay\s+by)\s*[:.]?\s*(.*)$"
)
_TERMS = rx(r"\b(?:net|within|in)\s+(\d{1,3})\s*(?:days?|d)\b|\bnet\s*(\d{1,3})\b")
_TERMS_CONTEXT = rx(r"\b(?:pay|payment|payable|terms|due|net)\b")
_ON_RECEIPT = rx(r"\b(?:due|payable)\s+(?:up)?on\s+receipt\b")
_CURRENCY_LABEL = rx(r"^currency\s*[:.]?\s*(.*)$")
_CUSTOMER_LABEL = rx(
    r"^(?:bill(?:ed)?\s+to|invoice(?:d)?\s+to|sold\s+to|customer|client|buyer|recipient)"
    r"\s*[:.]?\s*(.*)$"
)
_VENDOR_LABEL = rx(r"^(?:from|vendor|supplier|seller|issued\s+by|sold\s+by)\s*[:.]?\s*(.*)$")
_EMAIL = re2.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_TITLE_WORDS = rx(r"^(?:tax\s+)?(?:invoice|facture|rechnung|factura|bill|receipt)\b")
_ID_TOKEN = re2.compile(r"^[A-Za-z0-9][A-Za-z0-9/._#-]*$")
_ID_FALLBACK = rx(r"\b(?:inv|invoice)[-/#]?\s?([A-Z0-9][A-Z0-9/-]*\d[A-Z0-9/-]*)")


def extract_invoice(pages: list[str]) -> dict[str, Any]:
    """The invoice.extract output for the page texts of one invoice."""
    lines = split_lines(pages)
    text = "\n".join(pages)
    style = detect_number_style(text)
    currency_label = _labelled(lines, [_CURRENCY_LABEL], lambda v: v if v.strip() else None)
    currency = detect_currency(text, currency_label, style)
    order = detect_date_order(text, default_day_first=currency != "USD")

    items = read_table(lines, style)
    totals = read_totals(lines, style)
    invoice_date = _labelled(lines, [_DATE_LABEL], lambda v: parse_date(v, order))
    if invoice_date is None:
        invoice_date = _labelled(lines, [_DATE_LABEL_LOOSE], lambda v: parse_date(v, order))
    if invoice_date is None:
        first_page = "\n".join(line.text for line in lines if line.page == 0)
        dates = find_dates(first_page, order)
        invoice_date = dates[0][1] if dates else None
    due_date = _labelled(lines, [_DUE_LABEL], lambda v: parse_date(v, order))
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
    """Candidate values for a label: the rest of its cell, the next cell, the cell below."""
    line = lines[index]
    candidates = [rest.strip()] if rest.strip() else []
    if cell_index + 1 < len(line.cells):
        candidates.append(line.cells[cell_index + 1].text)
    label = line.cells[cell_index]
    for below in lines[index + 1 : index + 3]:
        for cell in below.cells:
            if cell.start <= label.end + 2 and cell.end >= label.start - 2:
                candidates.append(cell.text)
                break
        if below.cells:
            break
    return candidates


def _labelled(lines: list[Line], patterns: list[Any], parse: Any) -> Any:
    """The first label match, in reading order, whose candidate value parses."""
    for pattern in patterns:
        for index, line in enumerate(lines):
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
    for token in candidate.split():
        token = token.strip(".,;:")
        if any(ch.isdigit() for ch in token) and len(token) <= 60 and _ID_TOKEN.match(token):
            return token
    return None


def _invoice_number(lines: list[Line], text: str) -> str:
    found = _labelled(lines, [_NUMBER_LABEL, _INVOICE_COLON, _NUMBER_LABEL_LOOSE], _id_value)
    if found is not None:
        return str(found)
    match = _ID_FALLBACK.search(text)
    return match.group(1) if match else "unknown"


def _due_from_terms(lines: list[Line], issued: dt.date) -> dt.date | None:
    for line in lines:
        text = line.text
        if not _TERMS_CONTEXT.search(text):
            continue
        if _ON_RECEIPT.search(text):
            return issued
        match = _TERMS.search(text)
        if match:
            days = int(match.group(1) or match.group(2))
            if 0 < days <= 365:
                return issued + dt.timedelta(days=days)
    return None


# -- parties -----------------------------------------------------------------


def _block_below(lines: list[Line], index: int, column: int, limit: int = 5) -> list[str]:
    """Text of the cells starting at `column` on the lines after `index`, up to a gap."""
    block: list[str] = []
    for line in lines[index + 1 :]:
        if not line.cells or line.page != lines[index].page or len(block) >= limit:
            break
        cell = next((c for c in line.cells if abs(c.start - column) <= 3), None)
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
