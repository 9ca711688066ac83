"""The derived `pdf` view: real PDFs made by reportlab, and hostile ones that must not hurt."""

from __future__ import annotations

import base64
import io
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

from evals.checks import PdfLimits, PdfPool, grade, open_pdf_pool, query
from evals.checks._paths import PdfUnreadable
from evals.checks._pdfview import assemble_pdf
from tests.evals._checks import checks, doc


def report_pdf() -> bytes:
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, invariant=1)
    canvas.setTitle("Quarterly report")
    canvas.setAuthor("Finance")
    canvas.drawString(72, 800, "Revenue 1,234.50 EUR")
    canvas.acroForm.textfield(
        name="approved_by", value="Jane Roe", x=72, y=700, width=200, height=20
    )
    canvas.acroForm.checkbox(name="signed", checked=True, x=72, y=650)
    canvas.showPage()
    canvas.drawString(72, 800, "Costs 900.00 EUR")
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def raw_pdf(content: bytes) -> bytes:
    """A one-page PDF whose content stream is `content`, Flate-encoded as given."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    return assemble_pdf(objects)


def flate_bomb(megabytes: int) -> bytes:
    """A valid PDF whose page content inflates from a few hundred KB to `megabytes` MB."""
    squeeze = zlib.compressobj(1)
    chunk = b"0" * (1 << 20)
    data = b"".join(squeeze.compress(chunk) for _ in range(megabytes)) + squeeze.flush()
    return raw_pdf(data)


def node(data: bytes) -> dict[str, Any]:
    return {
        "media_type": "application/pdf",
        "filename": "report.pdf",
        "data_base64": base64.b64encode(data).decode("ascii"),
    }


@pytest.fixture(scope="module")
def pool() -> Iterator[PdfPool]:
    with open_pdf_pool(workers=2) as started:
        yield started


class CountingPool:
    """A pool that counts reads, to show a PDF is parsed once per graded document."""

    def __init__(self, pool: PdfPool) -> None:
        self.pool = pool
        self.limits = pool.limits
        self.reads = 0

    def read(self, data: bytes) -> dict[str, Any]:
        self.reads += 1
        return self.pool.read(data)


def test_the_view_of_a_real_pdf(pool: PdfPool) -> None:
    counting = CountingPool(pool)
    source = """
- {path: $.output.report.pdf.page_count, equals: 2}
- {path: $.output.report.pdf.text, contains: 'Revenue 1,234.50 EUR'}
- {path: '$.output.report.pdf.pages[0].text', contains: Revenue}
- {path: '$.output.report.pdf.pages[-1].text', contains: 'Costs 900.00'}
- {path: $.output.report.pdf.metadata.title, equals: Quarterly report}
- {path: $.output.report.pdf.fields.approved_by, equals: Jane Roe}
- {path: $.output.report.pdf.fields.signed, equals: 'Yes'}
- {path: '$.output.report.pdf.pages[*].text', each: {matches: '\\d+\\.\\d\\d EUR'}}
- {path: $.output.claimed_pages, equals: {path: $.output.report.pdf.page_count}}
"""
    document = doc({"report": node(report_pdf()), "claimed_pages": 2})
    graded = grade(checks(source), document, pdf=counting)  # type: ignore[arg-type]
    assert [(r.name, r.status, r.detail) for r in graded.results if not r.passed] == []
    assert counting.reads == 1  # parsed once for the cell, not once per check


def test_paths_through_several_pdfs(pool: PdfPool) -> None:
    document = doc({"files": [node(report_pdf()), {"note": "no pdf"}, node(report_pdf())]})
    result = grade(
        checks("- {path: '$.output.files[*].pdf.page_count', equals: [2, 2]}"), document, pdf=pool
    ).results[0]
    assert result.passed
    last = query("$.output.files[0].pdf.pages[-1].text", document, pdf=pool)
    assert [(n.path, n.value) for n in last] == [
        ("$['output']['files'][0]['pdf']['pages'][1]['text']", "Costs 900.00 EUR\n")
    ]
    nodes = query("$.output.files[*].pdf.metadata.title", document, pdf=pool)
    assert [(n.path, n.value) for n in nodes] == [
        ("$['output']['files'][0]['pdf']['metadata']['title']", "Quarterly report"),
        ("$['output']['files'][2]['pdf']['metadata']['title']", "Quarterly report"),
    ]


def test_a_flate_bomb_fails_the_check_and_the_pool_goes_on(pool: PdfPool) -> None:
    document = doc({"report": node(flate_bomb(64)), "ok": node(report_pdf())})
    source = (
        "- {path: $.output.report.pdf.page_count, equals: 1}\n"
        "- {path: $.output.ok.pdf.page_count, equals: 2}\n"
    )
    bomb, fine = grade(checks(source), document, pdf=pool).results
    assert bomb.status == "fail"
    assert bomb.detail.startswith(
        "PDF at $['output']['report']: LimitReachedError: Limit reached while decompressing"
    )
    assert fine.passed


def test_a_truncated_or_foreign_file_fails_the_check(pool: PdfPool) -> None:
    whole = report_pdf()
    cases = {
        "truncated": node(whole[: len(whole) // 2]),
        "text": node(b"hello, this is not a PDF"),
        "empty": node(b""),
        "bad_base64": {"media_type": "application/pdf", "data_base64": "%%% not base64"},
    }
    source = "".join(f"- {{path: $.output.{k}.pdf.text, exists: true}}\n" for k in cases)
    results = grade(checks(source), doc(cases), pdf=pool).results
    details = [r.detail for r in results]
    assert all(r.status == "fail" for r in results)
    assert details[0] == "PDF at $['output']['truncated']: PdfReadError: EOF marker not found"
    assert details[1].startswith("PDF at $['output']['text']: PdfReadError: PDF starts with")
    assert details[2].startswith("PDF at $['output']['empty']: EmptyFileError")
    assert details[3] == "PDF at $['output']['bad_base64']: data_base64 is not valid base64"


def test_a_reader_that_overstays_is_killed_and_replaced() -> None:
    limits = PdfLimits(max_decompressed_bytes=1 << 30, memory_bytes=2 << 30)
    with PdfPool(1, limits) as slow:
        with pytest.raises(PdfUnreadable, match="reading the PDF took longer than 0.2 s"):
            slow.read(flate_bomb(400), timeout_s=0.2)
        assert slow.read(report_pdf())["page_count"] == 2


def test_a_reader_out_of_memory_fails_the_pdf_not_the_run() -> None:
    limits = PdfLimits(max_decompressed_bytes=1 << 30, memory_bytes=256 << 20, timeout_s=60)
    with PdfPool(1, limits) as small:
        with pytest.raises(PdfUnreadable) as caught:
            small.read(flate_bomb(400))
        assert str(caught.value) in {
            "reading the PDF needs more memory than a reader may use",
            "the PDF reader died reading it (out of memory or crashed)",
        }
        assert small.read(report_pdf())["page_count"] == 2


def test_oversized_pdfs_are_refused_before_reading(pool: PdfPool) -> None:
    limits = PdfLimits(max_bytes=1000)
    with PdfPool(1, limits) as tiny:
        with pytest.raises(PdfUnreadable, match="more than the 1000 bytes a reader takes"):
            tiny.read(report_pdf())


def test_without_a_pool_grade_starts_one_when_a_pdf_is_needed() -> None:
    document = doc({"report": node(report_pdf())})
    result = grade(checks("- {path: $.output.report.pdf.page_count, equals: 2}"), document)
    assert result.passed


def test_the_pool_is_closed_by_its_context() -> None:
    with PdfPool(1) as short_lived:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        short_lived.read(report_pdf())
