"""acme/report-writer: its PDFs read back with pypdf (strict), as the suite reads them.

Checked: page count (and `pages` bounds), every promised text in the
extracted text (whitespace collapsed), the metadata title and author, the
AcroForm fields by name and value, invariant bytes; and 400s for inputs the
schema cannot refuse alone.
"""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal
from typing import Any

import httpx
import pytest
from pypdf import PdfReader

from examples.agents import report_writer
from examples.agents.report_writer import number_text
from schema import load_schema
from tests._servers import serve
from tests.examples._client import error_of, invoke, output_of, post_asgi

CAPABILITY = "report.render"


def _example() -> dict[str, Any]:
    example: dict[str, Any] = json.loads(
        json.dumps(load_schema("capabilities/report.render.input")["examples"][0])
    )
    return example


def _render(value: Any, *, raw: bytes | None = None) -> tuple[PdfReader, dict[str, Any]]:
    response = post_asgi(report_writer.app, invoke(CAPABILITY, value), raw=raw)
    output = output_of(response, CAPABILITY)
    report = output["report"]
    assert report["media_type"] == "application/pdf"
    reader = PdfReader(
        io.BytesIO(base64.b64decode(report["data_base64"], validate=True)), strict=True
    )
    return reader, output


def _text(reader: PdfReader) -> str:
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


def test_renders_everything_the_input_asks_for() -> None:
    value = _example()
    reader, output = _render(value)
    assert output["report"]["filename"] == "monthly-operations-report-march-2026.pdf"
    pages = value["pages"]
    assert pages["min"] <= len(reader.pages) <= pages["max"]
    assert reader.metadata is not None
    assert reader.metadata.title == value["title"]
    assert reader.metadata.author == value["author"]
    text = _text(reader)
    expected = [
        value["title"],
        value["subtitle"],
        value["author"],
        "2026-03-01",
        "2026-03-31",
        "March 2026",
    ]
    for metric in value["metrics"]:
        expected += [
            metric["name"],
            number_text(metric["value"])
            if not isinstance(metric["value"], str)
            else metric["value"],
        ]
        if "unit" in metric:
            expected.append(metric["unit"])
    for section in value["sections"]:
        expected += [
            section["heading"],
            *(" ".join(p.split()) for p in section["text"].split("\n\n")),
        ]
    expected += [value["table"]["title"], *value["table"]["columns"]]
    expected += [str(cell) for row in value["table"]["rows"] for cell in row if cell is not None]
    missing = [item for item in expected if item not in text]
    assert not missing
    assert reader.get_form_text_fields() == value["fields"]


def test_numbers_show_in_their_shortest_plain_form() -> None:
    # raw JSON text, so 1234.50 and 1E3 reach the agent as written
    raw = (
        b'{"capability": "report.render", "input": {"title": "Figures", '
        b'"period": {"start": "2026-01-01", "end": "2026-01-31"}, "metrics": ['
        b'{"name": "Revenue", "value": 1234.50, "unit": "EUR"}, {"name": "Ratio", "value": 2.0}, '
        b'{"name": "Visits", "value": 1E3}, {"name": "Margin", "value": -0.250}, '
        b'{"name": "Nothing", "value": 0.00}]}}'
    )
    reader, _ = _render(None, raw=raw)
    text = _text(reader)
    for shown in ("Revenue 1234.5 EUR", "Ratio 2 ", "Visits 1000", "Margin -0.25", "Nothing 0"):
        assert shown in text + " ", shown
    assert "1234.50" not in text and "1E3" not in text and "2.0" not in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1234, "1234"),
        (Decimal("1234.50"), "1234.5"),
        (Decimal("1E+3"), "1000"),
        (Decimal("2.0"), "2"),
        (Decimal("-0.0"), "0"),
        (Decimal("0.000125"), "0.000125"),
        (0.1, "0.1"),
        (Decimal("12345678901234567890.5"), "12345678901234567890.5"),
    ],
)
def test_number_text(value: Any, text: str) -> None:
    assert number_text(value) == text


def test_a_long_table_continues_over_pages_with_its_header() -> None:
    value = _example()
    del value["pages"]
    value["table"]["rows"] = [
        [f"Region {i:03d}", i * 17, f"{i * 1000 + 0.5:,.2f}"] for i in range(1, 181)
    ]
    reader, _ = _render(value)
    assert len(reader.pages) >= 3
    text = _text(reader)
    assert all(f"Region {i:03d}" in text for i in range(1, 181))
    last = " ".join(reader.pages[-1].extract_text().split())
    assert "Country Orders Revenue (EUR)" in last  # the header repeats
    assert reader.get_form_text_fields() == value["fields"]


def test_new_page_sections_and_minimum_pages() -> None:
    value = _example()
    value["sections"].append(
        {"heading": "Appendix: method", "text": "Figures are unaudited.", "new_page": True}
    )
    value["pages"] = {"min": 4, "max": 6}
    reader, _ = _render(value)
    assert len(reader.pages) == 4
    assert "Appendix: method" not in reader.pages[0].extract_text()
    assert "Appendix: method" in reader.pages[1].extract_text()


def test_maximum_pages_makes_it_compact() -> None:
    value = _example()
    value["table"]["rows"] = [[f"Region {i:03d}", i, "1.00"] for i in range(1, 111)]
    del value["pages"]
    regular, _ = _render(value)
    value["pages"] = {"max": len(regular.pages) - 1}
    compact, _ = _render(value)
    assert len(compact.pages) <= value["pages"]["max"]
    text = _text(compact)
    assert all(f"Region {i:03d}" in text for i in range(1, 111))


def test_latin1_text_round_trips_through_metadata_text_and_fields() -> None:
    value = {
        "title": "Überblick Geschäftsjahr 2025 – Ñandú & Søn <AG>".replace("–", "-"),
        "period": {"start": "2025-01-01", "end": "2025-12-31", "label": "Année fiscale"},
        "metrics": [{"name": "Umsatz (brutto)", "value": "1.234.567,89", "unit": "£"}],
        "fields": {"signed_by": "Zoë Müller-Lüdenscheidt", "place": "Köln"},
    }
    reader, _ = _render(value)
    assert reader.metadata is not None and reader.metadata.title == value["title"]
    text = _text(reader)
    for item in (value["title"], "Année fiscale", "Umsatz (brutto)", "1.234.567,89 £"):
        assert item in text
    assert reader.get_form_text_fields() == value["fields"]


def test_same_input_same_bytes() -> None:
    _, first = _render(_example())
    _, second = _render(_example())
    assert first == second


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda v: v["table"]["rows"].append(["only one cell"]), "$.table.rows[3]"),
        (lambda v: v.update(pages={"min": 3, "max": 2}), "$.pages"),
        (lambda v: v["metrics"][0].update(name="Price in \u20ac"), "$.metrics[0].name"),
        (lambda v: v.update(fields={"approved.by": "x"}), "$.fields"),
        (lambda v: v.update(metrics=[]), "$.metrics"),
        (lambda v: v["period"].update(end="31/03/2026"), "$.period.end"),
    ],
)
def test_inputs_it_cannot_render_faithfully_are_400(change: Any, path: str) -> None:
    value = _example()
    change(value)
    error = error_of(post_asgi(report_writer.app, invoke(CAPABILITY, value)), 400)
    assert error["code"] == "input_schema_violation"
    assert error["details"]["path"] == path


def test_over_a_real_socket() -> None:
    with (
        serve(report_writer.create()) as base_url,
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        response = client.post("/", json=invoke(CAPABILITY, _example()))
        output = output_of(response, CAPABILITY)
    reader = PdfReader(io.BytesIO(base64.b64decode(output["report"]["data_base64"])), strict=True)
    assert reader.metadata is not None and reader.metadata.title == _example()["title"]
