"""acme/report-writer: renders structured report data as a PDF (capability report.render).

reportlab platypus in invariant mode (the same input gives the same bytes),
standard fonts only, so every Latin-1 character shows and extracts as
itself. What report.render.input.json promises, this agent draws:

- the title as the PDF metadata title (and the author as metadata author),
  and as the first heading;
- the period's dates as YYYY-MM-DD and its label, each metric's name, value
  and unit (numbers in their shortest plain decimal form);
- each section's heading and paragraphs, on a new page when asked;
- the table, split over as many pages as it needs with its header repeated;
- each form field as an AcroForm text field of that exact name and value.

When the page count falls outside ``pages`` it renders again once: compact
(smaller type) when over the maximum, padded with notes pages when under the
minimum. A table far too long for ``pages.max`` still comes out too long.

Serve it with ``python -m examples.agents.report_writer --port 8103``.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, letter
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import (
    Flowable,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)
from starlette.applications import Starlette

from examples.agents._protocol import AgentIdentity, Answer, create_app, estimate_tokens, run
from schema.errors import UsageError
from schema.jsontext import dumps

__all__ = ["IDENTITY", "app", "create", "main", "number_text", "render"]

IDENTITY = AgentIdentity(id="acme/report-writer", version="1.0.0")
PAGE_SIZES = {"A4": A4, "letter": letter}
MARGIN = 18 * mm
CREATOR = "acme/report-writer 1.0.0"


def number_text(value: int | Decimal | float) -> str:
    """A number's shortest plain decimal form: 1234.50 -> '1234.5', 2.0 -> '2', 1E3 -> '1000'."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number here")
    if isinstance(value, int):
        return str(value)
    number = Decimal(str(value)) if isinstance(value, float) else value
    if number == 0:
        return "0"
    text = format(number.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return number_text(value)


def _para(text: str, style: ParagraphStyle) -> Paragraph:
    return Paragraph(escape(text), style)


class _FormField(Flowable):  # type: ignore[misc]  # reportlab is untyped
    """A labelled AcroForm text field, placed in the flow like a paragraph."""

    def __init__(self, name: str, value: str, font_size: float) -> None:
        super().__init__()
        self.name = name
        self.value = value
        self.font_size = font_size
        self.height = font_size * 2.2
        self.width = 0.0

    def wrap(self, available_width: float, available_height: float) -> tuple[float, float]:
        self.width = available_width
        return available_width, self.height

    def draw(self) -> None:
        canvas = self.canv
        label_width = min(60 * mm, self.width * 0.4)
        canvas.setFont("Helvetica", self.font_size)
        canvas.drawString(0, self.height * 0.3, f"{self.name}:")
        canvas.acroForm.textfield(
            name=self.name,
            value=self.value,
            tooltip=self.name,
            x=label_width,
            y=0,
            width=self.width - label_width,
            height=self.height * 0.9,
            relative=True,
            maxlen=max(200, len(self.value)),
            fontName="Helvetica",
            fontSize=self.font_size,
            borderWidth=0.5,
            borderColor=colors.grey,
            fillColor=colors.white,
            textColor=colors.black,
            forceBorder=True,
        )


@dataclass(frozen=True)
class _Look:
    body: float
    heading: float
    title: float
    space: float
    padding: float


REGULAR = _Look(body=10, heading=13, title=18, space=6, padding=2)
COMPACT = _Look(body=7, heading=9, title=13, space=2, padding=0.5)


def _styles(look: _Look) -> dict[str, ParagraphStyle]:
    base = getSampleStyleSheet()
    return {
        "title": ParagraphStyle(
            "t", parent=base["Title"], fontSize=look.title, leading=look.title * 1.25
        ),
        "subtitle": ParagraphStyle(
            "st", parent=base["Normal"], fontSize=look.heading, leading=look.heading * 1.3
        ),
        "heading": ParagraphStyle(
            "h",
            parent=base["Heading2"],
            fontSize=look.heading,
            leading=look.heading * 1.3,
            spaceBefore=look.space * 2,
            spaceAfter=look.space,
        ),
        "body": ParagraphStyle(
            "b",
            parent=base["Normal"],
            fontSize=look.body,
            leading=look.body * 1.35,
            spaceAfter=look.space,
        ),
        "cell": ParagraphStyle(
            "c", parent=base["Normal"], fontSize=look.body * 0.9, leading=look.body * 1.1
        ),
    }


def _widths(header: list[str], rows: list[list[str]], total: float) -> list[float]:
    longest = [len(h) for h in header]
    for row in rows[:500]:
        for index, cell in enumerate(row):
            longest[index] = max(longest[index], min(len(cell), 40))
    weights = [max(4, n) for n in longest]
    return [total * w / sum(weights) for w in weights]


def _table(header: list[str], rows: list[list[str]], width: float, look: _Look) -> Table:
    style = _styles(look)["cell"]
    bold = ParagraphStyle("cb", parent=style, fontName="Helvetica-Bold")
    data = [[_para(text, bold) for text in header]]
    data += [[_para(text, style) for text in row] for row in rows]
    table = Table(data, colWidths=_widths(header, rows, width), repeatRows=1)
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8ecf1")),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("TOPPADDING", (0, 0), (-1, -1), look.padding),
                ("BOTTOMPADDING", (0, 0), (-1, -1), look.padding),
            ]
        )
    )
    return table


def _story(data: dict[str, Any], width: float, look: _Look, padding: int) -> list[Flowable]:
    s = _styles(look)
    story: list[Flowable] = [_para(data["title"], s["title"])]
    if data.get("subtitle"):
        story.append(_para(data["subtitle"], s["subtitle"]))
    period = data["period"]
    line = f"Period: {period['start']} to {period['end']}"
    if period.get("label"):
        line += f" ({period['label']})"
    story.append(Spacer(1, look.space))
    story.append(_para(line, s["body"]))
    if data.get("author"):
        story.append(_para(f"Prepared by: {data['author']}", s["body"]))

    story.append(_para("Key figures", s["heading"]))
    metrics = [
        [m["name"], " ".join(filter(None, [_cell_text(m["value"]), m.get("unit")]))]
        for m in data["metrics"]
    ]
    story.append(_table(["Metric", "Value"], metrics, width, look))

    for section in data.get("sections", []):
        if section.get("new_page"):
            story.append(PageBreak())
        story.append(_para(section["heading"], s["heading"]))
        for paragraph in section["text"].split("\n\n"):
            if paragraph.strip():
                story.append(_para(" ".join(paragraph.split()), s["body"]))

    table = data.get("table")
    if table is not None:
        story.append(_para(table.get("title") or "Data", s["heading"]))
        rows = [[_cell_text(cell) for cell in row] for row in table["rows"]]
        story.append(_table(table["columns"], rows, width, look))

    fields = data.get("fields") or {}
    if fields:
        story.append(_para("Form fields", s["heading"]))
        for name, value in fields.items():
            story.append(_FormField(name, value, look.body))
            story.append(Spacer(1, look.space))

    for number in range(padding):
        story.append(PageBreak())
        story.append(_para("Notes", s["heading"]))
        story.append(_para(f"This page is left for notes ({number + 1} of {padding}).", s["body"]))
    return story


def _build(data: dict[str, Any], look: _Look, padding: int) -> tuple[bytes, int]:
    buffer = io.BytesIO()
    pagesize = PAGE_SIZES[data.get("page_size", "A4")]
    doc = SimpleDocTemplate(
        buffer,
        pagesize=pagesize,
        leftMargin=MARGIN,
        rightMargin=MARGIN,
        topMargin=MARGIN,
        bottomMargin=MARGIN,
        title=data["title"],
        author=data.get("author", ""),
        subject=data.get("subtitle", ""),
        creator=CREATOR,
        producer=CREATOR,
        invariant=1,
    )
    doc.build(_story(data, pagesize[0] - 2 * MARGIN, look, padding))
    return buffer.getvalue(), int(doc.page)


def _check(data: dict[str, Any]) -> None:
    """What the input schema cannot say: row widths and a consistent page range."""
    table = data.get("table")
    if table is not None:
        width = len(table["columns"])
        for index, row in enumerate(table["rows"]):
            if len(row) != width:
                raise UsageError(
                    f"table row {index} has {len(row)} cells; the table has {width} columns",
                    code="input_schema_violation",
                    details={"path": f"$.table.rows[{index}]"},
                )
    pages = data.get("pages") or {}
    if "min" in pages and "max" in pages and pages["min"] > pages["max"]:
        raise UsageError(
            "pages.min is greater than pages.max",
            code="input_schema_violation",
            details={"path": "$.pages"},
        )


def render(data: dict[str, Any]) -> tuple[bytes, int]:
    """The report PDF and its page count, within `pages` when the content allows."""
    _check(data)
    pages = data.get("pages") or {}
    pdf, count = _build(data, REGULAR, 0)
    if "max" in pages and count > pages["max"]:
        compact, compact_count = _build(data, COMPACT, 0)
        if compact_count < count:
            pdf, count = compact, compact_count
    if "min" in pages and count < pages["min"]:
        pdf, count = _build(data, REGULAR, pages["min"] - count)
    return pdf, count


def _filename(title: str) -> str:
    slug = "".join(ch.lower() if ch.isascii() and ch.isalnum() else "-" for ch in title)
    slug = "-".join(part for part in slug.split("-") if part)[:60].strip("-")
    return f"{slug or 'report'}.pdf"


def _handle(value: dict[str, Any]) -> Answer:
    pdf, _ = render(value)
    output = {
        "report": {
            "media_type": "application/pdf",
            "filename": _filename(value["title"]),
            "data_base64": base64.b64encode(pdf).decode("ascii"),
        }
    }
    drawn = dumps(value)  # what the document says, give or take its labels
    return Answer(
        output=output,
        input_tokens=estimate_tokens(drawn),
        output_tokens=estimate_tokens(drawn) + 50,
    )


def create() -> Starlette:
    """The agent's ASGI app."""
    return create_app(IDENTITY, {"report.render": _handle})


# The manifest's endpoint names this attribute (asgi:examples.agents.report_writer:app).
# Building it does no I/O: it is routes and handlers only.
app = create()


def main(argv: Sequence[str] | None = None) -> None:
    run(create, argv, "acme/report-writer: report.render over holon-http")


if __name__ == "__main__":
    main()
