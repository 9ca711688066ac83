"""RFC 8785 (JSON Canonicalization Scheme) text and digests.

Digests of suites, cases and plans are sha256 over this text, so the same
content hashes the same on every machine whatever its key order, number
spelling (`1.50` vs `1.5`) or string escapes. Numbers are canonicalised as
RFC 8785 says: as the IEEE 754 double they denote, written the way
ECMAScript's `Number.prototype.toString` writes it. Decimals (how holon
reads every JSON number) therefore hash by value, not by spelling.
"""

from __future__ import annotations

import hashlib
import json
import math
from decimal import Decimal
from typing import Any

__all__ = ["canonical_digest", "canonical_json", "digest", "jcs_value", "number_text"]

# The C encoder of the json module escapes exactly as RFC 8785 asks: `"` and
# `\\`, the short forms \b \f \n \r \t, other controls as lowercase \u00xx,
# everything else literal.
_encode = json.encoder.encode_basestring


def _string(text: str) -> str:
    if not text.isascii():  # ASCII holds no surrogate: only other text needs the check
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                "a lone surrogate cannot be canonicalised (not valid Unicode)"
            ) from None
    encoded: str = _encode(text)
    return encoded


_EXACT_INT = 2**53  # every integer below it in magnitude is a double, written as its digits


def number_text(value: int | float | Decimal) -> str:
    """ECMAScript's shortest round-trip form of the double nearest `value`."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value} is not a finite JSON number")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr() is the shortest string that round-trips: the digits ECMAScript uses.
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = k + int(exponent)  # value = 0.digits x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif type(value) is int and -_EXACT_INT < value < _EXACT_INT:
        out.append(int.__repr__(value))
    elif isinstance(value, int | float | Decimal):
        out.append(number_text(value))
    elif isinstance(value, dict):
        ascii_keys = True
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            ascii_keys = ascii_keys and key.isascii()
        out.append("{")
        # ASCII keys sort the same by code point as by UTF-16 code unit.
        keys = sorted(value) if ascii_keys else sorted(value, key=_utf16_key)
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def canonical_json(value: Any) -> str:
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def digest(value: Any) -> str:
    """sha256, hex, of the RFC 8785 canonical JSON of `value`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


# -- certificates' digests: through the rfc8785 library --------------------------------------
#
# A certificate's subject is checked by third parties with their own RFC 8785
# implementation, so it is computed with a maintained one (rfc8785) rather
# than the writer above; tests/records/test_certificates.py holds the two equal
# on identities and cards.


def jcs_value(value: Any) -> Any:
    """`value` with every number as RFC 8785 sees it: an IEEE 754 double (an int when
    whole and exact), since holon reads JSON numbers as Decimals. ValueError for a number
    beyond a double or a value that is not JSON."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | Decimal | float):
        number = value if isinstance(value, Decimal) else Decimal(value)
        if not number.is_finite():
            raise ValueError(f"{value} is not a finite JSON number")
        if number == number.to_integral_value() and abs(number) <= 2**53:
            return int(number)
        as_float = float(number)
        if not math.isfinite(as_float):
            raise ValueError(f"{value} is beyond a double and has no RFC 8785 form")
        return as_float
    if isinstance(value, dict):
        return {str(k): jcs_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jcs_value(v) for v in value]
    raise ValueError(f"{type(value).__name__} is not JSON")


def canonical_digest(value: Any) -> str:
    """sha256 (hex) of the RFC 8785 text of a JSON value, written by rfc8785. ValueError
    when it has none (a number beyond a double, a lone surrogate)."""
    import rfc8785

    try:
        text = rfc8785.dumps(jcs_value(value))
    except (rfc8785.CanonicalizationError, UnicodeError) as exc:
        raise ValueError(str(exc)) from None
    return hashlib.sha256(text).hexdigest()
