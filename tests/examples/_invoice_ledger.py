"""A third invoice layout for the invoice-reader tests, beside `_invoice_pdf`'s two.

What the seeded generator's invoices showed the reader missing, drawn by
hand: a proportional font, a position column, an ambiguous "Article"
column, all-digit SKUs, header fields written right to left in one text
object, a bare "Number:" label and qualified totals labels.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from reportlab.lib.pagesizes import A4

from tests.examples._invoice_pdf import (
    Column,
    InvoiceSpec,
    Style,
    _line_amount,
    draw_headings,
    finish,
    format_date,
    format_money,
    format_qty,
    make_items,
    new_canvas,
    total_rows,
)


def render_ledger(
    spec: InvoiceSpec,
    *,
    position_header: str = "Pos.",
    number_label: bool = True,
    customer_label: bool = True,
) -> bytes:
    """A third layout, in Times (a proportional font): a position column
    (`position_header`), an "Article" column that holds the description
    beside an "Art. No." column of all-digit SKUs, right-aligned numbers of
    varied widths, header fields drawn right to left in one text object
    ("Number:" as the bare label, or no label at all and the number only in
    a footer note), and qualified totals labels ("Loyalty discount", "plus VAT").
    Without `customer_label` the customer's address has no "Sold to" over it,
    only the sender's one-line return address (a window envelope's layout)."""
    style = spec.style
    width, height = A4
    canvas, buffer = new_canvas(A4)
    money = spec.amounts()
    canvas.setFont("Times-Bold", 16)
    canvas.drawString(40, height - 50, spec.vendor)
    canvas.setFont("Times-Roman", 9)
    for offset, line in enumerate([*spec.vendor_address, f"VAT No.: {spec.vendor_tax_id}"]):
        canvas.drawString(40, height - 64 - 11 * offset, line)
    canvas.setFont("Times-Bold", 18)
    canvas.drawRightString(width - 40, height - 50, "INVOICE")
    # One text object, drawn right to left: the order in the file is not the reading order.
    meta = [f"Amount due: {spec.currency} {format_money(money['total'], spec.currency, style)}"]
    meta.append(f"Date: {format_date(spec.issued, style.date_format)}")
    if number_label:
        meta.append(f"Number: {spec.number}")
    text = canvas.beginText()
    text.setFont("Times-Roman", 9)
    line_start = right = width - 40
    text.setTextOrigin(line_start, height - 110)
    for item in meta:
        start = right - canvas.stringWidth(item, "Times-Roman", 9)
        text.moveCursor(start - line_start, 0)  # Td: relative to the current line's start
        text.textOut(item)
        line_start, right = start, start - 24
    canvas.drawText(text)
    if customer_label:
        canvas.setFont("Times-Bold", 9)
        canvas.drawString(40, height - 140, "Sold to")
    else:
        canvas.setFont("Times-Roman", 7)
        sender = " \u00b7 ".join([spec.vendor, *spec.vendor_address])
        canvas.drawString(40, height - 140, sender)
    canvas.setFont("Times-Roman", 9)
    for offset, line in enumerate([spec.customer, *spec.customer_address]):
        canvas.drawString(40, height - 152 - 11 * offset, line)
    y = height - 220
    cols: list[Column] = [(40, position_header, "l"), (70, "Article", "l"), (330, "Art. No.", "l")]
    cols += [(420, "Qty", "r"), (490, "Unit price", "r"), (width - 40, "Amount", "r")]
    canvas.setFont("Times-Bold", 9)
    draw_headings(canvas, y, cols)
    y -= 16
    canvas.setFont("Times-Roman", 9)
    for position, (sku, desc, qty, price) in enumerate(spec.items, 1):
        canvas.drawString(40, y, str(position))
        canvas.drawString(70, y, desc)
        canvas.drawString(330, y, sku)
        canvas.drawRightString(420, y, format_qty(qty, style))
        canvas.drawRightString(490, y, format_money(price, spec.currency, style))
        amount = format_money(_line_amount(qty, price), spec.currency, style)
        canvas.drawRightString(width - 40, y, amount)
        y -= 14
    y -= 10
    for label, value in total_rows(spec, "Loyalty discount", f"plus VAT {spec.tax_rate}%"):
        canvas.drawRightString(480, y, label)
        canvas.drawRightString(width - 40, y, format_money(value, spec.currency, style))
        y -= 12
    canvas.drawString(40, 70, f"Payment within {spec.due_days} days of the invoice date, net.")
    if not number_label:
        canvas.drawString(40, 58, f"Please quote {spec.number} with your payment.")
    return finish(canvas, buffer)


def ledger_spec() -> InvoiceSpec:
    """Items with all-digit SKUs (a catalogue numbered, not coded)."""
    items = [
        (f"{43001 + index * 7919 % 50000}", desc, qty, price)
        for index, (_, desc, qty, price) in enumerate(make_items(8, start=4))
    ]
    return InvoiceSpec(
        number="INV-2026-0815",
        issued=date(2026, 6, 2),
        currency="EUR",
        vendor="Ortolan Werkzeug GmbH",
        vendor_address=["Lindenstrasse 8", "70173 Stuttgart, Germany"],
        vendor_tax_id="DE193774520",
        customer="Brightwave Studios Ltd",
        customer_address=["4 Quay Street", "Manchester M3 3JE, United Kingdom"],
        items=items,
        tax_rate=Decimal(19),
        discount_rate=Decimal(3),
        due_days=14,
        style=Style(date_format="dmy_dot", number_format="comma", currency_display="code"),
    )
