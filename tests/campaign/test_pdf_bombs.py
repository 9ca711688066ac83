"""Malicious PDFs as agent output, beyond tests/evals/test_pdf.py (Flate bomb, truncated file).

Page-count bombs (a flat /Kids array of 200,000 pages; a page *DAG* whose
few nodes fan out to 10^6 or 2^40 pages), page tree cycles, objects nested
100,000 deep, form field trees too deep or cyclic, a form XObject drawing
itself, an xref /Prev chain pointing at itself, an object that is a
reference to itself. Each is read through the PDF pool as a check would:
the check fails with a note saying why, the pool goes on, nothing raises.
The reader's own bounds (time, memory, page tree entries) keep each cheap.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evals.checks import PdfPool, grade, open_pdf_pool
from evals.checks._pdfview import assemble_pdf
from tests.campaign._tally import record
from tests.evals._checks import checks, doc

CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
ONE_PAGE = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"


def build(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF of `objects` (numbered from 1; 1 is the catalog) with a correct xref table."""
    return assemble_pdf(objects, trailer)


def flat_pages(count: int) -> bytes:
    kids = b" ".join(b"3 0 R" for _ in range(count))
    return build([CATALOG, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count), PAGE])


def page_dag(width: int, depth: int) -> bytes:
    """Each /Pages node lists the next one `width` times: width**depth pages in a few objects."""
    objects = [CATALOG]
    for level in range(depth):
        kids = b" ".join(b"%d 0 R" % (3 + level) for _ in range(width))
        objects.append(
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, width ** (depth - level))
        )
    objects.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % (1 + depth))
    return build(objects)


def deep(opener: bytes, closer: bytes, levels: int) -> bytes:
    junk = opener * levels + closer * levels
    return build([CATALOG, ONE_PAGE, PAGE[:-2] + b"/Junk " + junk + b" >>"])


def field_chain(levels: int) -> bytes:
    objects = [CATALOG[:-2] + b"/AcroForm << /Fields [4 0 R] >> >>", ONE_PAGE, PAGE]
    objects += [b"<< /T (f%d) /Kids [%d 0 R] >>" % (i, 5 + i) for i in range(levels)]
    return build([*objects, b"<< /T (leaf) /V (x) >>"])


def drawing_itself() -> bytes:
    draw = b"<< /Length 8 >>\nstream\n/X Do   \nendstream"
    form = (
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10]"
        b" /Resources << /XObject << /X 4 0 R >> >> /Length 8 >>\nstream\n/X Do   \nendstream"
    )
    page = PAGE[:-2] + b"/Resources << /XObject << /X 4 0 R >> >> /Contents 5 0 R >>"
    return build([CATALOG, ONE_PAGE, page, form, draw])


def xref_loop() -> bytes:
    data = build([CATALOG, ONE_PAGE, PAGE])
    xref = int(data.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    return build([CATALOG, ONE_PAGE, PAGE], trailer=b"/Prev %d " % xref)


# name: (PDF bytes, words the failure's detail must hold; None: reads as a valid PDF)
BOMBS: dict[str, tuple[Callable[[], bytes], str | None]] = {
    "200,000 pages in one /Kids array": (lambda: flat_pages(200_000), "LimitReachedError"),
    "600 pages": (lambda: flat_pages(600), "the PDF has 600 pages, more than the 500 read"),
    "page DAG of 100^3 pages": (lambda: page_dag(100, 3), "more than the 500 pages read"),
    "page DAG of 10^6 pages": (lambda: page_dag(10, 6), "more than the 500 pages read"),
    "page DAG of 2^40 pages": (lambda: page_dag(2, 40), "more than the 500 pages read"),
    "page tree cycle (a node its own kid)": (
        lambda: build([CATALOG, b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>", PAGE]),
        "cyclic page references",
    ),
    "page tree cycle (through a child)": (
        lambda: build(
            [
                CATALOG,
                ONE_PAGE,
                b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
            ]
        ),
        "cyclic page references",
    ),
    "arrays nested 100,000 deep": (lambda: deep(b"[", b"]", 100_000), "PdfReadError"),
    "dictionaries nested 50,000 deep": (lambda: deep(b"<< /A ", b">>", 50_000), "PdfReadError"),
    "form fields nested 20,000 deep": (lambda: field_chain(20_000), "form field depth"),
    "an object that is a reference to itself": (
        lambda: build([CATALOG, ONE_PAGE, PAGE[:-2] + b"/Resources 4 0 R >>", b"4 0 R"]),
        "PDF at",
    ),
    # Handled inside pypdf: these read as the harmless PDFs they also are.
    "a form field tree cycle": (
        lambda: build(
            [
                CATALOG[:-2] + b"/AcroForm << /Fields [4 0 R] >> >>",
                ONE_PAGE,
                PAGE,
                b"<< /T (a) /Kids [5 0 R] >>",
                b"<< /T (b) /Kids [4 0 R] /Parent 4 0 R >>",
            ]
        ),
        None,
    ),
    "a form XObject drawing itself": (drawing_itself, None),
    "an xref /Prev pointing at itself": (xref_loop, None),
}


def node(data: bytes) -> dict[str, Any]:
    return {"media_type": "application/pdf", "data_base64": base64.b64encode(data).decode()}


@pytest.fixture(scope="module")
def pool() -> Iterator[PdfPool]:
    with open_pdf_pool(workers=1) as started:
        yield started


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_hostile_pdf_fails_its_check_with_a_note(pool: PdfPool, name: str) -> None:
    make, words = BOMBS[name]
    document = doc({"report": node(make()), "fine": node(flat_pages(1))})
    source = (
        "- {name: pages, path: $.output.report.pdf.page_count, gte: 1}\n"
        "- {name: text, path: $.output.report.pdf.text, exists: true}\n"
        "- {name: fields, path: $.output.report.pdf.fields, exists: true}\n"
        "- {name: the next PDF, path: $.output.fine.pdf.page_count, equals: 1}\n"
    )
    *bomb, fine = grade(checks(source), document, pdf=pool).results
    assert fine.passed, fine.detail  # the pool went on
    if words is None:
        assert all(result.passed for result in bomb), [r.detail for r in bomb]
        record("malicious PDFs", "read as harmless")
        return
    for result in bomb:
        assert result.status == "fail", (result.status, result.detail)
        assert result.detail.startswith("PDF at $['output']['report']: "), result.detail
        assert words in result.detail, result.detail
    record("malicious PDFs", "check failed with a note")
