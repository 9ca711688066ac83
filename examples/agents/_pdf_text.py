"""Positioned text of a PDF page: where each string is drawn, in points.

pypdf's layout mode turns a page into fixed-width text with one average
character width, so right-aligned numbers in a proportional font drift by
a character or two from line to line, and strings drawn in one text object
in another order than left to right come out glued together. A table reader
needs better: this module follows the page's text operators itself (through
pypdf's public ``visitor_operand_before`` hook), keeps the text state (font,
size, spacing, text and line matrices) and measures every shown string with
the font's widths, so each run of text has its real left and right edge.

It reads *simple* fonts (Type1, TrueType) with a standard encoding
(WinAnsi, MacRoman, Standard, or none for a standard font): what invoicing
tools and the standard 14 fonts produce. Widths come from the font's ``/Widths`` array, or
for the standard 14 fonts (and their common aliases: Arial, Times New Roman,
Courier New) from reportlab's copy of the Adobe metrics. A page with any
other font (composite Type0 fonts, Type3, custom ``/Differences``, subset
fonts whose codes only a ``/ToUnicode`` map explains) gives ``None``, and
the caller falls back to pypdf's layout text.

Only upright text is kept (rotated watermarks and margin notes are not part
of a table), and the work is bounded: at most `MAX_RUNS` runs a page.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pypdf import PageObject
from pypdf.generic import ArrayObject, DictionaryObject, NameObject
from reportlab.pdfbase.pdfmetrics import getFont

__all__ = ["MAX_RUNS", "TextRun", "page_runs"]

MAX_RUNS = 50_000
Matrix = tuple[float, float, float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)

# Name prefixes of the standard 14 text fonts and the metric-compatible fonts
# office software substitutes for them.
_FAMILIES = (
    ("helvetica", "Helvetica"),
    ("arial", "Helvetica"),
    ("timesnewroman", "Times"),
    ("times", "Times"),
    ("couriernew", "Courier"),
    ("courier", "Courier"),
)
# (bold, slanted) -> the standard font's name suffix
_STYLES = {
    "Times": {
        (False, False): "-Roman",
        (True, False): "-Bold",
        (False, True): "-Italic",
        (True, True): "-BoldItalic",
    },
    **{
        family: {
            (False, False): "",
            (True, False): "-Bold",
            (False, True): "-Oblique",
            (True, True): "-BoldOblique",
        }
        for family in ("Helvetica", "Courier")
    },
}
_ENCODINGS = {
    "/WinAnsiEncoding": "cp1252",
    "/MacRomanEncoding": "mac_roman",
    "/StandardEncoding": "latin-1",  # close enough for letters, digits and punctuation
    "/PDFDocEncoding": "latin-1",
}


@dataclass(frozen=True)
class TextRun:
    """A string drawn on the page: its left and right edge and baseline, in points."""

    x0: float
    x1: float
    y: float
    size: float  # the font size as drawn (text matrix and CTM applied)
    text: str


@dataclass(frozen=True)
class _Font:
    codec: str
    widths: dict[int, float]  # character code -> width in 1/1000 of the font size
    default: float


class _Unsupported(Exception):
    """The page uses a font this module cannot decode or measure."""


def _mult(m: Matrix, n: Matrix) -> Matrix:
    """m then n (PDF row-vector convention)."""
    return (
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    )


def _number(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _standard_name(base_font: str) -> str | None:
    """The standard-14 font whose metrics fit `base_font` ("ABCDEF+Arial,Bold": Helvetica-Bold)."""
    name = base_font.lstrip("/")
    if len(name) > 7 and name[6] == "+":  # a subset tag
        name = name[7:]
    key = name.lower().replace(" ", "")
    family = next((family for prefix, family in _FAMILIES if key.startswith(prefix)), None)
    if family is None:
        return None
    style = _STYLES[family][("bold" in key, "italic" in key or "oblique" in key)]
    return family + style


def _font(resource: Any) -> _Font:
    font = resource.get_object() if resource is not None else None
    if not isinstance(font, DictionaryObject):
        raise _Unsupported("font resource is not a dictionary")
    subtype = str(font.get("/Subtype", ""))
    if subtype not in ("/Type1", "/TrueType", "/MMType1"):
        raise _Unsupported(f"font subtype {subtype or 'missing'}")
    encoding = font.get("/Encoding")
    encoding = encoding.get_object() if encoding is not None else None
    if encoding is None and "/ToUnicode" in font:
        raise _Unsupported("font whose codes only its ToUnicode map explains")
    if encoding is None:
        codec = "latin-1"
    elif isinstance(encoding, NameObject) and str(encoding) in _ENCODINGS:
        codec = _ENCODINGS[str(encoding)]
    else:
        raise _Unsupported("font with a custom encoding")
    standard = _standard_name(str(font.get("/BaseFont", "")))
    widths: dict[int, float] = {}
    raw = font.get("/Widths")
    raw = raw.get_object() if raw is not None else None
    if isinstance(raw, ArrayObject) and len(raw) <= 256:
        first = int(_number(font.get("/FirstChar"), 0))
        widths = {first + index: _number(value) for index, value in enumerate(raw)}
    elif standard is not None:
        widths = dict(enumerate(getFont(standard).widths))
    descriptor = font.get("/FontDescriptor")
    descriptor = descriptor.get_object() if descriptor is not None else None
    default = 500.0
    if isinstance(descriptor, DictionaryObject):
        default = _number(descriptor.get("/MissingWidth"), 0) or _number(
            descriptor.get("/AvgWidth"), 500.0
        )
    return _Font(codec, widths, default)


def _raw_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes):
        return bytes(value)
    original = getattr(value, "original_bytes", None)
    if isinstance(original, bytes):
        return original
    if isinstance(value, str):
        return value.encode("latin-1", errors="replace")
    return None


@dataclass
class _State:
    """The text state of PDF 32000-1, 9.3, plus the text and line matrices."""

    fonts: dict[str, Any]
    font: _Font | None = None
    size: float = 0.0
    char_spacing: float = 0.0
    word_spacing: float = 0.0
    scale: float = 1.0
    leading: float = 0.0
    tm: Matrix = IDENTITY
    tlm: Matrix = IDENTITY
    runs: list[TextRun] = field(default_factory=list)
    cache: dict[str, _Font] = field(default_factory=dict)

    def set_font(self, name: Any, size: Any) -> None:
        key = str(name)
        if key not in self.cache:
            self.cache[key] = _font(self.fonts.get(key))
        self.font, self.size = self.cache[key], _number(size, self.size)

    def move(self, tx: float, ty: float) -> None:
        self.tlm = _mult((1.0, 0.0, 0.0, 1.0, tx, ty), self.tlm)
        self.tm = self.tlm

    def show(self, value: Any, ctm: Matrix) -> None:
        data = _raw_bytes(value)
        if data is None or self.font is None:
            return
        font = self.font
        text = codecs.decode(data, font.codec, errors="replace")
        matrix = _mult(self.tm, ctm)
        upright = abs(matrix[1]) < 1e-3 * abs(matrix[0]) and abs(matrix[2]) < 1e-3 * abs(matrix[3])
        advance = 0.0
        pieces: list[tuple[float, float]] = []
        for code in data:
            width = font.widths.get(code, font.default) / 1000.0
            step = width * self.size + self.char_spacing
            if code == 32:
                step += self.word_spacing
            start = advance
            advance += step * self.scale
            pieces.append((start, start + width * self.size * self.scale))
        if upright and matrix[0] > 0 and matrix[3] > 0 and len(self.runs) < MAX_RUNS:
            self._emit(text, pieces, matrix)
        self.tm = _mult((1.0, 0.0, 0.0, 1.0, advance, 0.0), self.tm)

    def _emit(self, text: str, pieces: list[tuple[float, float]], matrix: Matrix) -> None:
        """Runs of `text`, split where it holds two or more spaces in a row."""
        size = self.size * matrix[3]
        index, length = 0, len(text)
        while index < length:
            while index < length and text[index] == " ":
                index += 1
            end = index
            while end < length and not (
                text[end] == " " and (end + 1 == length or text[end + 1] == " ")
            ):
                end += 1
            if end > index:
                self.runs.append(
                    TextRun(
                        x0=matrix[0] * pieces[index][0] + matrix[4],
                        x1=matrix[0] * pieces[end - 1][1] + matrix[4],
                        y=matrix[5],
                        size=size,
                        text=text[index:end],
                    )
                )
            index = end

    def operate(self, operator: bytes, operands: list[Any], ctm: Matrix) -> None:
        handler = _HANDLERS.get(operator)
        if handler is not None:
            handler(self, operands, ctm)


def _bt(state: _State, operands: list[Any], ctm: Matrix) -> None:
    state.tm = state.tlm = IDENTITY


def _td(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if len(operands) >= 2:
        state.move(_number(operands[0]), _number(operands[1]))


def _td_leading(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if len(operands) >= 2:
        state.leading = -_number(operands[1])
        state.move(_number(operands[0]), _number(operands[1]))


def _tm(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if len(operands) >= 6:
        values = [_number(value) for value in operands[:6]]
        state.tm = state.tlm = (values[0], values[1], values[2], values[3], values[4], values[5])


def _next_line(state: _State, operands: list[Any], ctm: Matrix) -> None:
    state.move(0.0, -state.leading)


def _tj(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if operands:
        state.show(operands[0], ctm)


def _quote(state: _State, operands: list[Any], ctm: Matrix) -> None:
    _next_line(state, operands, ctm)
    _tj(state, operands, ctm)


def _double_quote(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if len(operands) >= 3:
        state.word_spacing, state.char_spacing = _number(operands[0]), _number(operands[1])
        _next_line(state, operands, ctm)
        state.show(operands[2], ctm)


def _tj_array(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if not operands or not isinstance(operands[0], list):
        return
    for element in operands[0]:
        if isinstance(element, (str, bytes)):
            state.show(element, ctm)
        else:
            shift = -_number(element) / 1000.0 * state.size * state.scale
            state.tm = _mult((1.0, 0.0, 0.0, 1.0, shift, 0.0), state.tm)


def _setter(name: str, factor: float = 1.0) -> Callable[[_State, list[Any], Matrix], None]:
    def handler(state: _State, operands: list[Any], ctm: Matrix) -> None:
        if operands:
            setattr(state, name, _number(operands[0]) * factor)

    return handler


def _tf(state: _State, operands: list[Any], ctm: Matrix) -> None:
    if len(operands) >= 2:
        state.set_font(operands[0], operands[1])


_HANDLERS: dict[bytes, Callable[[_State, list[Any], Matrix], None]] = {
    b"BT": _bt,
    b"Tf": _tf,
    b"Tc": _setter("char_spacing"),
    b"Tw": _setter("word_spacing"),
    b"Tz": _setter("scale", 0.01),
    b"TL": _setter("leading"),
    b"Td": _td,
    b"TD": _td_leading,
    b"Tm": _tm,
    b"T*": _next_line,
    b"Tj": _tj,
    b"'": _quote,
    b'"': _double_quote,
    b"TJ": _tj_array,
}


def _page_fonts(page: PageObject) -> dict[str, Any]:
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    if not isinstance(resources, DictionaryObject):
        return {}
    fonts = resources.get("/Font")
    fonts = fonts.get_object() if fonts is not None else None
    return dict(fonts) if isinstance(fonts, DictionaryObject) else {}


def page_runs(page: PageObject) -> list[TextRun] | None:
    """Every upright string on the page with its position, or None for fonts it cannot read."""
    state = _State(fonts=_page_fonts(page))
    failure: list[_Unsupported] = []

    def visit(operator: Any, operands: Any, cm: Any, tm: Any) -> None:
        if failure:
            return
        try:
            values = [_number(value) for value in list(cm)[:6]]
            ctm: Matrix = (values[0], values[1], values[2], values[3], values[4], values[5])
            state.operate(bytes(operator), list(operands), ctm)
        except _Unsupported as exc:
            failure.append(exc)

    page.extract_text(visitor_operand_before=visit)
    if failure:
        return None
    return state.runs
