"""Draw realistic 1-2 page supplier invoices with reportlab, with their truth.

A small test helper for the invoice-reader example agent, not the seeded
fixture generator of evals/fixtures: a handful of hand-picked styles (date
and number formats, currency symbols or codes, label wordings, discount and
tax lines, a line-item table that breaks across pages with its header
repeated) so the agent is tested against more than one template.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from reportlab.lib.pagesizes import A4, letter
from reportlab.pdfgen.canvas import Canvas

from evals.fixtures.invoice._formats import CENT, MONTHS

CATALOGUE = [
    ("Ergonomic desk chair, graphite", "245.00"),
    ("Monitor arm, dual, gas spring", "129.90"),
    ("A4 copier paper, 80 g/m2, box of 5 reams", "23.75"),
    ("USB-C docking station, 11 ports", "189.00"),
    ("Wireless keyboard and mouse set", "54.20"),
    ("Laser toner cartridge, black, high yield", "96.40"),
    ("Whiteboard markers, assorted, pack of 12", "8.95"),
    ("Standing desk frame, electric, twin motor", "412.00"),
    ("Noise-cancelling headset with boom microphone", "149.99"),
    ("Cable management tray, steel", "17.60"),
    ("Consulting services - onboarding workshop", "1150.00"),
    ("Desk lamp, LED, dimmable", "39.00"),
    ("Label printer tape, 12 mm, black on white", "11.25"),
    ("Ethernet patch cable, Cat6, 2 m", "3.80"),
    ("Shredder, cross-cut, 20 litre", "134.50"),
    ("Filing cabinet, 3 drawers, lockable", "218.00"),
]


@dataclass(frozen=True)
class Style:
    """How an invoice prints its values and labels."""

    date_format: str = "iso"  # iso | dmy_slash | dmy_dot | mdy_slash | long_dmy | long_mdy
    number_format: str = "dot"  # dot: 1,234.50 | comma: 1.234,50 | space: 1 234,50
    currency_display: str = "code"  # code: "EUR 12.00" | symbol: "€12.00" | suffix: "12,00 €"
    labels: str = "classic"  # classic | modern
    page_size: str = "A4"
    due: str = "date"  # date | terms | none


@dataclass
class InvoiceSpec:
    number: str
    issued: date
    currency: str
    vendor: str
    vendor_address: list[str]
    vendor_tax_id: str
    customer: str
    customer_address: list[str]
    items: list[tuple[str, str, Decimal, Decimal]]  # sku, description, qty, unit price
    tax_rate: Decimal
    discount_rate: Decimal = Decimal(0)
    due_days: int = 30
    style: Style = field(default_factory=Style)

    def amounts(self) -> dict[str, Decimal]:
        subtotal = sum((_line_amount(q, p) for _, _, q, p in self.items), Decimal(0))
        discount = (subtotal * self.discount_rate / 100).quantize(CENT, ROUND_HALF_UP)
        tax = ((subtotal - discount) * self.tax_rate / 100).quantize(CENT, ROUND_HALF_UP)
        return {
            "subtotal": subtotal,
            "discount": discount,
            "tax": tax,
            "total": subtotal - discount + tax,
        }

    def truth(self) -> dict[str, Any]:
        money = self.amounts()
        due = None if self.style.due == "none" else self.issued + timedelta(days=self.due_days)
        return {
            "invoice_number": self.number,
            "invoice_date": self.issued.isoformat(),
            "due_date": None if due is None else due.isoformat(),
            "currency": self.currency,
            "vendor": {"name": self.vendor},
            "customer": {"name": self.customer},
            **money,
            "line_items": [
                {
                    "sku": sku,
                    "description": desc,
                    "quantity": qty,
                    "unit_price": price,
                    "amount": _line_amount(qty, price),
                }
                for sku, desc, qty, price in self.items
            ],
        }


def _line_amount(qty: Decimal, price: Decimal) -> Decimal:
    return (qty * price).quantize(CENT, ROUND_HALF_UP)


def make_items(
    count: int, prefix: str = "KO", start: int = 0
) -> list[tuple[str, str, Decimal, Decimal]]:
    """`count` distinct line items drawn deterministically from the catalogue."""
    items = []
    for i in range(count):
        desc, price = CATALOGUE[(start + i * 5) % len(CATALOGUE)]
        qty = Decimal((i * 7) % 9 + 1)
        if i % 6 == 5:
            qty = Decimal("2.5")  # hours of service, say
        sku = f"{prefix}-{1000 + (start + i) * 37 % 9000:04d}"
        if i % 4 == 3:
            sku += "-B"
        items.append(
            (sku, desc if i < len(CATALOGUE) else f"{desc} (lot {i})", qty, Decimal(price))
        )
    return items


def format_date(value: date, style: str) -> str:
    if style == "iso":
        return value.isoformat()
    if style == "dmy_slash":
        return f"{value.day:02d}/{value.month:02d}/{value.year}"
    if style == "dmy_dot":
        return f"{value.day:02d}.{value.month:02d}.{value.year}"
    if style == "mdy_slash":
        return f"{value.month:02d}/{value.day:02d}/{value.year}"
    if style == "long_dmy":
        return f"{value.day} {MONTHS[value.month - 1]} {value.year}"
    if style == "long_mdy":
        return f"{MONTHS[value.month - 1][:3]} {value.day}, {value.year}"
    raise ValueError(style)


def format_number(value: Decimal, style: str, places: int = 2) -> str:
    text = f"{abs(value):,.{places}f}"
    if style == "comma":
        text = text.replace(",", "_").replace(".", ",").replace("_", ".")
    elif style == "space":
        text = text.replace(",", " ").replace(".", ",")
    return ("-" if value < 0 else "") + text


SYMBOLS = {"EUR": "\u20ac", "USD": "$", "GBP": "\u00a3"}


def format_money(value: Decimal, currency: str, style: Style) -> str:
    number = format_number(value, style.number_format)
    if style.currency_display == "symbol":
        return f"{SYMBOLS[currency]}{number}"
    if style.currency_display == "suffix":
        return f"{number} {SYMBOLS[currency]}"
    return f"{number}"


def format_qty(value: Decimal, style: Style) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return format_number(value, style.number_format, places=1)


Column = tuple[float, str, str]  # x, heading, "l" (drawn from x) or "r" (ending at x)


def new_canvas(size: tuple[float, float]) -> tuple[Canvas, io.BytesIO]:
    """A canvas drawing an invariant PDF (no dates, no random ids) into the buffer."""
    buffer = io.BytesIO()
    return Canvas(buffer, pagesize=size, invariant=1), buffer


def finish(canvas: Canvas, buffer: io.BytesIO) -> bytes:
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def draw_headings(canvas: Canvas, y: float, columns: list[Column]) -> None:
    for x, title, align in columns:
        (canvas.drawString if align == "l" else canvas.drawRightString)(x, y, title)


def total_rows(
    spec: InvoiceSpec, discount: str, tax: str, total: str = "Total due"
) -> list[tuple[str, Decimal]]:
    """The totals block under these labels: net, the discount if any (negative), tax, total."""
    money = spec.amounts()
    rows = [("Net total", money["subtotal"])]
    if money["discount"]:
        rows.append((discount, -money["discount"]))
    rows.append((tax, money["tax"]))
    rows.append((total, money["total"]))
    return rows


def render(spec: InvoiceSpec) -> bytes:
    """The invoice as PDF bytes (reportlab, invariant, standard fonts)."""
    style = spec.style
    size = A4 if style.page_size == "A4" else letter
    width, height = size
    canvas, buffer = new_canvas(size)
    canvas.setTitle("")
    labels = _labels(style.labels)
    money = spec.amounts()

    def header_block() -> float:
        canvas.setFont("Helvetica-Bold", 15)
        canvas.drawString(40, height - 50, spec.vendor)
        canvas.setFont("Helvetica", 9)
        y = height - 64
        for line in [*spec.vendor_address, f"VAT ID: {spec.vendor_tax_id}"]:
            canvas.drawString(40, y, line)
            y -= 11
        canvas.setFont("Helvetica-Bold", 20)
        canvas.drawRightString(width - 40, height - 52, "INVOICE")
        canvas.setFont("Helvetica", 9)
        meta = [
            (labels["number"], spec.number),
            (labels["date"], format_date(spec.issued, style.date_format)),
        ]
        if style.due == "date":
            due = spec.issued + timedelta(days=spec.due_days)
            meta.append((labels["due"], format_date(due, style.date_format)))
        elif style.due == "terms":
            meta.append(("Payment terms:", f"Net {spec.due_days} days"))
        if style.currency_display == "code":
            meta.append(("Currency:", spec.currency))
        my = height - 72
        for label, value in meta:
            canvas.drawRightString(width - 150, my, label)
            canvas.drawRightString(width - 40, my, value)
            my -= 12
        return float(min(y, my) - 14)

    def customer_block(y: float) -> float:
        canvas.setFont("Helvetica-Bold", 9)
        canvas.drawString(40, y, labels["bill_to"])
        canvas.setFont("Helvetica", 9)
        y -= 12
        for line in [spec.customer, *spec.customer_address]:
            canvas.drawString(40, y, line)
            y -= 11
        return y - 16

    columns: list[Column] = [(40, "SKU", "l"), (110, "Description", "l"), (390, "Qty", "r")]
    columns += [(470, labels["unit"], "r"), (width - 40, labels["amount"], "r")]

    def table_header(y: float) -> float:
        canvas.setFont("Helvetica-Bold", 9)
        draw_headings(canvas, y, columns)
        canvas.line(40, y - 4, width - 40, y - 4)
        return y - 16

    rows_bottom = 150
    page = 1
    pages_needed = _pages_needed(spec, height, rows_bottom)
    y = customer_block(header_block())
    y = table_header(y)
    canvas.setFont("Helvetica", 9)
    for index, (sku, desc, qty, price) in enumerate(spec.items):
        lines = _wrap(desc, 52)
        if y - 11 * len(lines) < rows_bottom:
            canvas.setFont("Helvetica-Oblique", 8)
            canvas.drawString(40, 60, "Continued on next page")
            canvas.drawRightString(width - 40, 60, f"Page {page} of {pages_needed}")
            canvas.showPage()
            page += 1
            canvas.setFont("Helvetica", 9)
            canvas.drawString(40, height - 50, f"{spec.vendor} - {labels['number']} {spec.number}")
            y = table_header(height - 80)
            canvas.setFont("Helvetica", 9)
        canvas.drawString(40, y, sku)
        canvas.drawString(110, y, lines[0])
        canvas.drawRightString(390, y, format_qty(qty, style))
        canvas.drawRightString(470, y, format_money(price, spec.currency, style))
        amount = _line_amount(qty, price)
        canvas.drawRightString(width - 40, y, format_money(amount, spec.currency, style))
        y -= 11
        for more in lines[1:]:
            canvas.drawString(110, y, more)
            y -= 11
        y -= 3
        del index

    canvas.line(300, y, width - 40, y)
    y -= 14
    totals = [(labels["subtotal"], money["subtotal"])]
    if money["discount"]:
        totals.append((f"Discount ({spec.discount_rate}%)", -money["discount"]))
    totals.append((f"{labels['tax']} {spec.tax_rate}%", money["tax"]))
    for label, value in totals:
        canvas.drawRightString(470, y, label)
        canvas.drawRightString(width - 40, y, format_money(value, spec.currency, style))
        y -= 12
    canvas.setFont("Helvetica-Bold", 10)
    total_label = labels["total"] + (
        f" ({spec.currency})" if style.currency_display == "code" else ""
    )
    canvas.drawRightString(470, y - 2, total_label)
    canvas.drawRightString(width - 40, y - 2, format_money(money["total"], spec.currency, style))
    canvas.setFont("Helvetica", 8)
    canvas.drawString(
        40, 90, "Please transfer the total to IBAN DE44 5001 0517 5407 3249 31, BIC INGDDEFFXXX."
    )
    canvas.drawString(
        40, 80, "Late payments accrue interest of 1% per month. Thank you for your business!"
    )
    if pages_needed > 1:
        canvas.setFont("Helvetica-Oblique", 8)
        canvas.drawRightString(width - 40, 60, f"Page {page} of {pages_needed}")
    return finish(canvas, buffer)


def _pages_needed(spec: InvoiceSpec, height: float, rows_bottom: float) -> int:
    y = height - 64 - 11 * (len(spec.vendor_address) + 1) - 14
    y = min(y, height - 72 - 12 * 4 - 14)
    y -= 12 + 11 * (len(spec.customer_address) + 1) + 16 + 16
    pages = 1
    for _, desc, _, _ in spec.items:
        rows = len(_wrap(desc, 52))
        if y - 11 * rows < rows_bottom:
            pages += 1
            y = height - 80 - 16
        y -= 11 * rows + 3
    return pages


def _wrap(text: str, width: int) -> list[str]:
    words = text.split()
    lines: list[str] = []
    current = ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    lines.append(current)
    return lines


def _labels(kind: str) -> dict[str, str]:
    if kind == "modern":
        return {
            "number": "Invoice #",
            "date": "Issue date:",
            "due": "Payment due:",
            "bill_to": "Billed to",
            "unit": "Price",
            "amount": "Line total",
            "subtotal": "Sub-total",
            "tax": "Sales tax",
            "total": "Amount due",
        }
    return {
        "number": "Invoice No.:",
        "date": "Invoice date:",
        "due": "Due date:",
        "bill_to": "Bill to:",
        "unit": "Unit price",
        "amount": "Amount",
        "subtotal": "Subtotal",
        "tax": "VAT",
        "total": "Total",
    }


def sample_spec(variant: str = "eur") -> InvoiceSpec:
    """The invoices the tests use, one per style family."""
    if variant == "eur":
        return InvoiceSpec(
            number="INV-2026-0042",
            issued=date(2026, 3, 5),
            currency="EUR",
            vendor="Kestrel Office Supply GmbH",
            vendor_address=["Hafenstrasse 12", "20457 Hamburg, Germany"],
            vendor_tax_id="DE284951735",
            customer="Brightwave Studios Ltd",
            customer_address=["4 Quay Street", "Manchester M3 3JE, United Kingdom"],
            items=make_items(6),
            tax_rate=Decimal(19),
            discount_rate=Decimal(5),
            style=Style(date_format="dmy_dot", number_format="comma", currency_display="code"),
        )
    if variant == "usd":
        return InvoiceSpec(
            number="10493",
            issued=date(2026, 1, 14),
            currency="USD",
            vendor="Pinecrest Hardware Co.",
            vendor_address=["88 Market Street, Suite 300", "Denver, CO 80202"],
            vendor_tax_id="84-1234567",
            customer="Lumen Dental Partners LLC",
            customer_address=["1200 Pearl Street", "Boulder, CO 80302"],
            items=make_items(9, prefix="PH", start=3),
            tax_rate=Decimal("8.25"),
            style=Style(
                date_format="long_mdy",
                number_format="dot",
                currency_display="symbol",
                labels="modern",
                page_size="letter",
            ),
        )
    if variant == "gbp":
        return InvoiceSpec(
            number="GB/2026/117",
            issued=date(2026, 2, 9),
            currency="GBP",
            vendor="Thistle & Finch Stationers Ltd",
            vendor_address=["17 Rose Street", "Edinburgh EH2 2PR"],
            vendor_tax_id="GB 274 5519 82",
            customer="Harbour Analytics plc",
            customer_address=["Level 5, 1 Dock Road", "Leith EH6 6QQ"],
            items=make_items(5, prefix="TF", start=7),
            tax_rate=Decimal(20),
            discount_rate=Decimal(10),
            style=Style(date_format="long_dmy", currency_display="symbol", due="terms"),
        )
    if variant == "multipage":
        return InvoiceSpec(
            number="KOS-88213",
            issued=date(2026, 3, 31),
            currency="EUR",
            vendor="Kestrel Office Supply GmbH",
            vendor_address=["Hafenstrasse 12", "20457 Hamburg, Germany"],
            vendor_tax_id="DE284951735",
            customer="Nordlicht Logistik AG",
            customer_address=["Speicherstadt 4", "20457 Hamburg"],
            items=make_items(38, prefix="KO", start=2),
            tax_rate=Decimal(19),
            discount_rate=Decimal("2.5"),
            due_days=14,
            style=Style(date_format="dmy_slash", number_format="space", currency_display="suffix"),
        )
    if variant == "us_slash":
        return InvoiceSpec(
            number="PO-7781-A",
            issued=date(2026, 4, 3),
            currency="USD",
            vendor="Bluegate Print Services",
            vendor_address=["51 Harbor Way", "Oakland, CA 94607"],
            vendor_tax_id="94-7654321",
            customer="Orchard Lane Bakery",
            customer_address=["9 Orchard Lane", "Berkeley, CA 94704"],
            items=make_items(4, prefix="BG", start=11),
            tax_rate=Decimal("9.5"),
            style=Style(date_format="mdy_slash", currency_display="code", due="none"),
        )
    raise ValueError(variant)


VARIANTS = ["eur", "usd", "gbp", "multipage", "us_slash"]


def render_grid(spec: InvoiceSpec) -> bytes:
    """A second, unrelated layout: title top-left, From / Bill to side by side,
    labels above their values, price before quantity, a VAT-rate column, totals
    as "Label: value" in one run, no SKU header (the column is called "Item")."""
    style = spec.style
    size = A4 if style.page_size == "A4" else letter
    width, height = size
    canvas, buffer = new_canvas(size)
    canvas.setFont("Helvetica-Bold", 22)
    canvas.drawString(40, height - 55, "TAX INVOICE")
    canvas.setFont("Helvetica-Bold", 9)
    canvas.drawString(40, height - 90, "From:")
    canvas.drawString(300, height - 90, "Invoice to:")
    canvas.setFont("Helvetica", 9)
    y = height - 102
    left = [spec.vendor, *spec.vendor_address, f"VAT Reg. No. {spec.vendor_tax_id}"]
    right = [spec.customer, *spec.customer_address]
    for i in range(max(len(left), len(right))):
        if i < len(left):
            canvas.drawString(40, y, left[i])
        if i < len(right):
            canvas.drawString(300, y, right[i])
        y -= 11
    y -= 14
    grid = [("Invoice Number", spec.number), ("Date", format_date(spec.issued, style.date_format))]
    if style.due == "date":
        grid.append(
            ("Due", format_date(spec.issued + timedelta(days=spec.due_days), style.date_format))
        )
    xs = [40, 200, 340]
    canvas.setFont("Helvetica-Bold", 9)
    for x, (label, _) in zip(xs, grid, strict=False):
        canvas.drawString(x, y, label)
    canvas.setFont("Helvetica", 9)
    for x, (_, value) in zip(xs, grid, strict=False):
        canvas.drawString(x, y - 12, value)
    y -= 40
    if style.due == "terms":
        canvas.drawString(
            40, y + 8, f"Terms: payment within {spec.due_days} days of the invoice date."
        )
        y -= 10
    cols: list[Column] = [(40, "Item", "l"), (120, "Description", "l"), (400, "Price", "r")]
    cols += [(440, "Qty", "r"), (490, "VAT %", "r"), (width - 40, "Amount", "r")]
    canvas.setFont("Helvetica-Bold", 9)
    draw_headings(canvas, y, cols)
    y -= 15
    canvas.setFont("Helvetica", 9)
    for sku, desc, qty, price in spec.items:
        lines = _wrap(desc, 40)
        canvas.drawString(40, y, sku)
        canvas.drawString(120, y, lines[0])
        canvas.drawRightString(400, y, format_money(price, spec.currency, style))
        canvas.drawRightString(440, y, format_qty(qty, style))
        canvas.drawRightString(490, y, f"{spec.tax_rate}%")
        canvas.drawRightString(
            width - 40, y, format_money(_line_amount(qty, price), spec.currency, style)
        )
        for more in lines[1:]:
            y -= 11
            canvas.drawString(120, y, more)
        y -= 14
    y -= 10
    for label, amount in total_rows(spec, "Less discount", "VAT"):
        canvas.drawRightString(
            width - 40, y, f"{label}: {format_money(amount, spec.currency, style)}"
        )
        y -= 12
    canvas.setFont("Helvetica", 8)
    canvas.drawString(
        40, 60, f"{spec.vendor} - registered in England and Wales - all amounts in {spec.currency}"
    )
    return finish(canvas, buffer)


def grid_spec() -> InvoiceSpec:
    return InvoiceSpec(
        number="2026-00318",
        issued=date(2026, 5, 7),
        currency="GBP",
        vendor="Marlow Joinery Works",
        vendor_address=["Unit 3, Riverside Estate", "Marlow SL7 1HZ"],
        vendor_tax_id="GB 318 4471 09",
        customer="Ms. Priya Raman",
        customer_address=["22 Orchard Close", "Henley-on-Thames RG9 2AB"],
        items=make_items(7, prefix="MJ", start=5),
        tax_rate=Decimal(20),
        discount_rate=Decimal(0),
        due_days=21,
        style=Style(date_format="long_dmy", currency_display="symbol", due="terms"),
    )
