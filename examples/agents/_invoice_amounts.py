"""The totals block of an invoice: subtotal, discounts, tax, charges, total.

Totals come from their labels (subtotal, discount, tax lines added up,
shipping, total), then are reconciled with the line items
(`_invoice_table`): what is missing is derived from what is there.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from examples.agents._invoice_layout import ID_WORD, TAX_ID, Line, rx
from examples.agents._invoice_table import Item
from examples.agents._invoice_values import NumberStyle, parse_amount

__all__ = ["read_totals", "reconcile"]

# Totals, tried in this order on the first cells of a line. Qualified labels
# ("Loyalty discount", "Less: credit", "plus VAT 20%", "State sales tax 6.25%")
# are found by their key word anywhere in a short label (`_MAX_LABEL_WORDS`).
_MAX_LABEL_WORDS = 6
_TOTAL_INCL = rx(r"^total\s+(?:incl|including|inc)\b")
_SUBTOTAL = rx(
    r"^(?:sub[\s-]?total|net\s+total|total\s+net|net\s+amount|goods\s+total|"
    r"total\s+(?:excl|excluding|before|w/o|without|ex)\b|amount\s+before\s+tax)"
)
_TAX_WORD = r"(?:vat|tax|gst|hst|pst|qst|mwst|ust|iva|tva|btw|moms)"
_TAX = rx(r"\b" + _TAX_WORD + r"\b")
_TAX_REST = rx(r"\b" + _TAX_WORD + r"\b\s*[:.]?\s*(.*)$")
_TAX_TOTAL = rx(r"^total\s+" + _TAX_WORD + r"\b|^" + _TAX_WORD + r"\s+total\b")
_DISCOUNT = rx(
    r"\b(?:discount|rebate|reduction|promotion|promo|voucher|credit|allowance|markdown)\b"
)
_INVOICE = rx(r"\binvoice\b")
_CHARGES = rx(r"^(?:plus\s+)?(?:shipping|delivery|freight|postage|carriage|handling)\b")
_PAID = rx(r"^(?:amount\s+paid|paid|payments?|deposit|less\s+paid)\b")
_TOTAL = rx(
    r"^(grand\s+total|invoice\s+total|total\s+due|total\s+amount|total\s+payable|"
    r"total\s+to\s+pay|amount\s+due|balance\s+due|amount\s+payable|total)\b"
)

# -- totals ------------------------------------------------------------------


def _line_amount(line: Line, after: int, rest: str, style: NumberStyle) -> Decimal | None:
    for cell in reversed(line.cells[after + 1 :]):
        value = parse_amount(cell.text, style)
        if value is not None:
            return value
    tail = rest.split()
    for size in (3, 2, 1):  # "Total: EUR 1 234,50" inside the label's own cell
        if len(tail) >= size:
            value = parse_amount(" ".join(tail[-size:]), style)
            if value is not None:
                return value
    return None


def read_totals(lines: list[Line], style: NumberStyle) -> dict[str, Any]:
    found: dict[str, Any] = {"tax_lines": [], "tax_total": None, "discounts": [], "charges": []}
    best_total: tuple[int, Decimal] | None = None
    for line in lines:
        if line.used:
            continue
        for index, cell in enumerate(line.cells[:3]):
            text = cell.text
            kind: str | None = None
            rank = 0
            if _TOTAL_INCL.search(text):
                kind, rank = "total", 3
            elif _SUBTOTAL.search(text):
                kind = "subtotal"
            elif _TAX_TOTAL.search(text):
                kind = "tax_total"
            elif len(text.split()) > _MAX_LABEL_WORDS or _INVOICE.search(text):
                continue  # running text, or a title ("TAX INVOICE 4471")
            elif _DISCOUNT.search(text):
                kind = "discount"
            elif _TAX.search(text):
                rest = _TAX_REST.search(text)
                if (rest and ID_WORD.search(rest.group(1))) or TAX_ID.search(text):
                    continue
                kind = "tax"
            elif _CHARGES.search(text):
                kind = "charge"
            elif _PAID.search(text):
                break
            else:
                match = _TOTAL.search(text)
                if match:
                    word = match.group(1).lower()
                    rank = (
                        1
                        if word.startswith("balance")
                        else 2
                        if "due" in word or "pay" in word
                        else 3
                    )
                    kind = "total"
            if kind is None:
                continue
            value = _line_amount(line, index, text, style)
            if value is None:
                break
            if kind == "subtotal":
                found["subtotal"] = value
            elif kind == "tax_total":
                found["tax_total"] = value
            elif kind == "tax":
                found["tax_lines"].append(value)
            elif kind == "discount":
                found["discounts"].append(abs(value))
            elif kind == "charge":
                found["charges"].append(value)
            elif best_total is None or rank >= best_total[0]:
                best_total = (rank, value)
            break
    if best_total is not None:
        found["total"] = best_total[1]
    return found


def reconcile(found: dict[str, Any], items: list[Item]) -> dict[str, Any]:
    amounts = [item.amount for item in items if item.amount is not None]
    subtotal: Decimal | None = found.get("subtotal")
    if subtotal is None:
        subtotal = sum(amounts, Decimal(0)) if amounts else None
    discount = sum(found["discounts"], Decimal(0))
    charges = sum(found["charges"], Decimal(0))
    tax: Decimal | None = found["tax_total"]
    if tax is None and found["tax_lines"]:
        tax = sum(found["tax_lines"], Decimal(0))
    total: Decimal | None = found.get("total")
    if subtotal is None and total is not None:
        subtotal = total - (tax or Decimal(0)) + discount - charges
    if subtotal is None:
        subtotal = Decimal(0)
    if tax is None:
        tax = Decimal(0)
        if total is not None:
            tax = max(Decimal(0), total - (subtotal - discount + charges))
    if total is None:
        total = subtotal - discount + tax + charges
    out: dict[str, Any] = {"subtotal": subtotal}
    if discount:
        out["discount"] = discount
    out["tax"] = tax
    out["total"] = total
    return out
