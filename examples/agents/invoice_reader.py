"""acme/invoice-reader: reads supplier invoice PDFs (capability invoice.extract).

A deterministic, rule-based example agent: each page becomes lines of
positioned cells (`_pdf_text` follows the page's text operators through
pypdf; `_invoice_layout` groups what they draw), and `_invoice_parser` reads
header fields, the line-item table and the totals from them. No model, no
network.

The PDF is the caller's, so reading it is bounded: at most 10 MiB of PDF and
100 pages, parsed with ``strict=True``; a file pypdf cannot read, an encrypted
one, or one with no text layer (a scan) is refused with 422, never a 500.

Serve it with ``python -m examples.agents.invoice_reader --port 8101``, or
register ``examples/agents/acme-invoice-reader.yaml`` (in-process, ``asgi:``).
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
from collections.abc import Sequence
from typing import Any

from pypdf import PageObject, PdfReader
from pypdf.errors import PyPdfError
from starlette.applications import Starlette

from examples.agents._invoice_layout import Line, lines_from_runs, split_lines
from examples.agents._invoice_parser import extract_invoice
from examples.agents._pdf_text import page_runs
from examples.agents._protocol import (
    AgentIdentity,
    Answer,
    PayloadTooLarge,
    create_app,
    estimate_tokens,
    run,
)
from schema.errors import InputError, UsageError
from schema.jsontext import dumps

__all__ = ["IDENTITY", "MAX_PAGES", "MAX_PDF_BYTES", "app", "create", "main", "read_pages"]

logger = logging.getLogger(__name__)

IDENTITY = AgentIdentity(id="acme/invoice-reader", version="1.1.0")
MAX_PDF_BYTES = 10 * 1024 * 1024
MAX_PAGES = 100
MAX_TEXT_CHARS = 2_000_000  # layout text of 100 dense pages stays far below


class UnreadableDocument(InputError):
    """The document is a valid request but not a PDF this agent can read."""

    code = "unreadable_document"


def read_pages(data: bytes) -> list[list[Line]]:
    """Each page's lines of positioned cells (`_invoice_layout`).

    Text positions come from the page's text operators (`_pdf_text`); a page
    with fonts it cannot measure is read in pypdf's layout mode instead.
    Raises UnreadableDocument for anything that is not a readable,
    text-bearing PDF within the limits.
    """
    if not data.startswith(b"%PDF-"):
        raise UnreadableDocument("the document is not a PDF (no %PDF- header)")
    try:
        reader = PdfReader(io.BytesIO(data), strict=True)
        if reader.is_encrypted:
            raise UnreadableDocument("the PDF is encrypted")
        count = len(reader.pages)
        if count > MAX_PAGES:
            raise UnreadableDocument(
                f"the PDF has {count} pages; this agent reads at most {MAX_PAGES}"
            )
        pages: list[list[Line]] = []
        size = 0
        for number, page in enumerate(reader.pages):
            lines = _page_lines(page, number)
            size += sum(len(line.text) for line in lines)
            if size > MAX_TEXT_CHARS:
                raise UnreadableDocument("the PDF holds more text than an invoice plausibly does")
            pages.append(lines)
    except UnreadableDocument:
        raise
    except (
        PyPdfError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        ZeroDivisionError,
        RecursionError,
        OSError,
    ) as exc:
        raise UnreadableDocument(f"the PDF cannot be read: {type(exc).__name__}: {exc}") from None
    if not any(line.cells for lines in pages for line in lines):
        raise UnreadableDocument("the PDF has no text layer (a scanned image?); no OCR here")
    return pages


def _page_lines(page: PageObject, number: int) -> list[Line]:
    runs = page_runs(page)
    if runs:
        return lines_from_runs(runs, number)
    try:
        text = page.extract_text(extraction_mode="layout")
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        # Layout mode is pickier about odd fonts than plain mode.
        text = page.extract_text()
    return split_lines(text, number)


def _decode(document: dict[str, Any]) -> bytes:
    encoded: str = document["data_base64"]
    if len(encoded) > (MAX_PDF_BYTES + 2) // 3 * 4:
        raise PayloadTooLarge(f"the PDF is over {MAX_PDF_BYTES} bytes")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("document.data_base64 is not valid base64", code="bad_request") from None
    if len(data) > MAX_PDF_BYTES:
        raise PayloadTooLarge(f"the PDF is over {MAX_PDF_BYTES} bytes")
    return data


def extract(value: dict[str, Any]) -> Answer:
    """The invoice.extract handler."""
    pages = read_pages(_decode(value["document"]))
    lines = [line for page in pages for line in page]
    output = extract_invoice(lines)
    logger.debug("read %d pages, %d line items", len(pages), len(output["line_items"]))
    return Answer(
        output=output,
        input_tokens=estimate_tokens("\n".join(line.text for line in lines)),
        output_tokens=estimate_tokens(dumps(output)),
    )


def create() -> Starlette:
    """The agent's ASGI app."""
    return create_app(IDENTITY, {"invoice.extract": extract})


# The manifest's endpoint names this attribute (asgi:examples.agents.invoice_reader:app).
# Building it does no I/O: it is routes and handlers only.
app = create()


def main(argv: Sequence[str] | None = None) -> None:
    run(create, argv, "acme/invoice-reader: invoice.extract over holon-http")


if __name__ == "__main__":
    main()
