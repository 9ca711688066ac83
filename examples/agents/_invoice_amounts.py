"""The money side of an invoice: the line-item table and the totals block.

- The table is found by its header row ("SKU | Description | Qty | Unit
  price | Amount"): numbers go to the numeric column whose right edge is
  nearest, text to the text column whose left edge is nearest; a text-only
  line under the description continues it; the header may repeat on every
  page, and a page without one continues the previous page's table.
- Totals come from their labels (subtotal, discount, tax lines added up,
  shipping, total), then are reconciled: what is missing is derived from
  what is there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import re2

from examples.agents._invoice_layout import ID_WORD, TAX_ID, Line, rx
from examples.agents._invoice_values import CURRENCY_CODES, NumberStyle, parse_amount

__all__ = ["Item", "read_table", "read_totals", "reconcile"]

# Totals, tried in this order on the first cells of a line.
_TOTAL_INCL = rx(r"^total\s+(?:incl|including|inc)\b")
_SUBTOTAL = rx(
    r"^(?:sub[\s-]?total|net\s+total|total\s+net|net\s+amount|goods\s+total|"
    r"total\s+(?:excl|excluding|before|w/o|without|ex)\b|amount\s+before\s+tax)"
)
_TAX = rx(r"^(?:total\s+)?(?:vat|tax|sales\s+tax|gst|hst|pst|qst|mwst|ust|iva|tva|btw|moms)\b")
_TAX_TOTAL = rx(r"^total\s+(?:vat|tax)\b")
_DISCOUNT = rx(r"^(?:less\s+)?(?:discount|rebate|reduction|promotion|promo|voucher)\b")
_CHARGES = rx(r"^(?:shipping|delivery|freight|postage|carriage|handling)\b")
_PAID = rx(r"^(?:amount\s+paid|paid|payments?|deposit|less\s+paid)\b")
_TOTAL = rx(
    r"^(grand\s+total|invoice\s+total|total\s+due|total\s+amount|total\s+payable|"
    r"total\s+to\s+pay|amount\s+due|balance\s+due|amount\s+payable|total)\b"
)
_NOISE = rx(r"^(?:continued|page\s+\d+|carried\s+forward|brought\s+forward|\(continued)")

# Table header cells.
_HEADER_KINDS = [
    (
        "sku",
        rx(
            r"^(?:sku|item\s*(?:no\.?|code|#)|code|article(?:\s*no\.?)?|art\.?\s*no\.?|"
            r"part\s*(?:no\.?|number)|product\s*code|ref\.?|reference)$"
        ),
    ),
    (
        "description",
        rx(
            r"^(?:description|item\s+description|details|product|service|"
            r"designation|article\s+description)$"
        ),
    ),
    ("item", rx(r"^items?$")),
    ("qty", rx(r"^(?:qty\.?|quantity|units|hours|hrs|no\.\s*of\s*units|count)$")),
    (
        "price",
        rx(
            r"^(?:unit\s*price|price(?:\s*per\s*unit)?|rate|unit\s*cost|each|"
            r"price\s*/\s*unit|unit\s*net|net\s*price)$"
        ),
    ),
    (
        "amount",
        rx(
            r"^(?:amount|line\s*total|total|net\s*amount|net|sum|ext\.?\s*price|"
            r"extended|line\s*amount|total\s*price)$"
        ),
    ),
    ("rate", rx(r"^(?:vat|tax|vat\s*%|tax\s*%|vat\s*rate|tax\s*rate|%)$")),
    ("unit", rx(r"^(?:unit|uom)$")),
]
_HEADER_NOISE = re2.compile(
    r"\s*(?:\([^)]*\)|\b(?:" + "|".join(sorted(CURRENCY_CODES)) + r")\b|[$\x{20ac}\x{a3}])\s*"
)
_NUMERIC_KINDS = ("qty", "price", "amount", "rate")
_PERCENT = re2.compile(r"^-?\d{1,3}(?:[.,]\d+)?\s?%$")
_SKU_PREFIX = re2.compile(r"^([A-Z0-9][A-Z0-9._/-]*\d[A-Z0-9._/-]*)\s+(\S.*)$")


@dataclass(frozen=True)
class Column:
    kind: str
    start: int
    end: int


@dataclass
class Item:
    sku: str | None
    description: str
    quantity: Decimal | None
    unit_price: Decimal | None
    amount: Decimal | None
    extra_lines: list[str] = field(default_factory=list)
    printed: int = 0  # how many of quantity, unit price and amount the line printed


def _header(line: Line) -> list[Column] | None:
    if len(line.cells) < 3:
        return None
    columns: list[Column] = []
    for cell in line.cells:
        label = _HEADER_NOISE.sub(" ", cell.text).strip() or cell.text
        kind = next((k for k, pattern in _HEADER_KINDS if pattern.search(label)), None)
        if kind is None:
            return None
        columns.append(Column(kind, cell.start, cell.end))
    kinds = {c.kind for c in columns}
    if "item" in kinds:
        replacement = "sku" if "description" in kinds else "description"
        columns = [Column(replacement, c.start, c.end) if c.kind == "item" else c for c in columns]
        kinds = {c.kind for c in columns}
    if "amount" not in kinds or not kinds & {"qty", "price"} or not kinds & {"sku", "description"}:
        return None
    return columns


def _is_totals_line(line: Line) -> bool:
    return any(
        p.search(cell.text)
        for cell in line.cells[:3]
        for p in (_SUBTOTAL, _TOTAL, _TAX_TOTAL, _DISCOUNT, _TOTAL_INCL)
    )


def read_table(lines: list[Line], style: NumberStyle) -> list[Item]:
    items: list[Item] = []
    columns: list[Column] | None = None
    open_table = False
    page = -1
    for line in lines:
        if line.page != page:
            page = line.page
            if not open_table:
                columns = None
        header = _header(line)
        if header is not None:
            columns, open_table = header, True
            line.used = True
            continue
        if not open_table or columns is None or not line.cells:
            continue
        item = _row(line, columns, style)
        # A full row (quantity, price, amount) is an item even if its text starts
        # like a totals label ("Discount vouchers, pack of 10"); otherwise a totals
        # label ends the table.
        if item is not None and item.printed >= 3:
            items.append(item)
            line.used = True
        elif _is_totals_line(line):
            open_table = False
        elif item is not None:
            items.append(item)
            line.used = True
        elif items and _continues(line, columns):
            items[-1].extra_lines.append(" ".join(cell.text for cell in line.cells))
            line.used = True
    return items


def _nearest(columns: list[Column], kinds: tuple[str, ...], key: Any) -> Column | None:
    candidates = [c for c in columns if c.kind in kinds]
    return min(candidates, key=key) if candidates else None


def _row(line: Line, columns: list[Column], style: NumberStyle) -> Item | None:
    text_kinds = tuple(c.kind for c in columns if c.kind not in _NUMERIC_KINDS)
    values: dict[str, list[str]] = {}
    numbers: dict[str, Decimal] = {}
    first_text = columns[0] if columns[0].kind not in _NUMERIC_KINDS else None
    for cell in line.cells:
        if _PERCENT.match(cell.text):
            continue  # a tax-rate column: not part of the output
        anchored = first_text is not None and abs(cell.start - first_text.start) <= 2
        number = None if anchored else parse_amount(cell.text, style, allow_unit=True)
        if number is not None:
            column = _nearest(columns, _NUMERIC_KINDS, lambda c, e=cell.end: abs(c.end - e))
            if column is not None and column.kind not in numbers:
                numbers[column.kind] = number
                continue
        column = _nearest(
            [c for c in columns if c.start <= cell.start + 3] or columns,
            text_kinds,
            lambda c, s=cell.start: abs(c.start - s),
        )
        if column is None:
            return None
        values.setdefault(column.kind, []).append(cell.text)
    sku = " ".join(values.get("sku", [])) or None
    description = " ".join(values.get("description", []))
    if sku is None and description and any(c.kind == "sku" for c in columns):
        split = _SKU_PREFIX.match(description)
        if split:
            sku, description = split.group(1), split.group(2)
    if sku is not None and " " in sku and not description:
        sku, _, description = sku.partition(" ")
    if "amount" not in numbers or not (sku or description):
        return None
    if _NOISE.search(description or sku or ""):
        return None
    item = Item(sku, description, numbers.get("qty"), numbers.get("price"), numbers["amount"])
    item.printed = sum(kind in numbers for kind in ("qty", "price", "amount"))
    return _complete(item)


def _complete(item: Item) -> Item:
    """Fill a missing quantity or unit price from the other numbers on the line."""
    qty, price, amount = item.quantity, item.unit_price, item.amount
    assert amount is not None
    if qty is None and price:
        ratio = amount / price
        qty = ratio if ratio == ratio.to_integral_value() else Decimal(1)
    if price is None and qty:
        price = (amount / qty).quantize(Decimal("0.01"))
    item.quantity, item.unit_price = qty if qty is not None else Decimal(1), price or amount
    return item


def _continues(line: Line, columns: list[Column]) -> bool:
    """A text-only line under the description column continues the previous item."""
    description = next((c for c in columns if c.kind == "description"), None)
    if description is None or len(line.cells) > 2:
        return False
    cell = line.cells[0]
    return abs(cell.start - description.start) <= 3 and not _NOISE.search(cell.text)


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
            elif _TAX.search(text):
                rest = _TAX.sub("", text, count=1).strip().lstrip(":").strip()
                if ID_WORD.search(rest) or TAX_ID.search(text):
                    continue
                kind = "tax"
            elif _DISCOUNT.search(text):
                kind = "discount"
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
