"""Cases graded per second by the check DSL, as a ratio to hand-written Python doing the same.

Two cases: a 15-check invoice extraction (exact ids, approx money, SKU
multiset, regex, type, count) and a 5-check ticket classification. Checks
compile once; each timed iteration grades one document and reads `passed`.
A third figure includes `to_json()` of every result (what a runner stores).

    .venv/bin/python bench/checks/run.py [--json] [--seconds 2]
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import re2

from bench._args import bench_parser
from evals.checks import compile_checks, grade
from schema import jsontext
from schema.documents import parse_document

EXTRACTION_CHECKS = """
- {name: invoice number, path: $.output.invoice_number, equals: {path: $.expected.invoice_number}}
- {name: invoice date, path: $.output.invoice_date, equals: {path: $.expected.invoice_date}}
- {name: due date, path: $.output.due_date, equals: {path: $.expected.due_date}}
- {name: vendor name, path: $.output.vendor.name, equals: {path: $.expected.vendor.name},
   normalize: [casefold, collapse_whitespace]}
- {name: vendor vat, path: $.output.vendor.vat_id, full_match: '[A-Z]{2}[0-9A-Z]{8,12}'}
- {name: currency, path: $.output.currency, one_of: [EUR, USD, GBP]}
- {name: subtotal, path: $.output.subtotal, approx: {path: $.expected.subtotal}, abs: 0.01}
- {name: tax, path: $.output.tax, approx: {path: $.expected.tax}, abs: 0.01}
- {name: discount, path: $.output.discount, approx: {path: $.expected.discount}, abs: 0.01}
- {name: total, path: $.output.total, approx: {path: $.expected.total}, abs: 0.01}
- {name: total positive, path: $.output.total, gt: 0}
- {name: line count, path: '$.output.line_items[*]', count: {path: $.expected.line_count}}
- {name: skus, path: '$.output.line_items[*].sku', contains_only: {path: $.expected.skus}}
- {name: po number, path: $.output.po_number, type: [string, 'null']}
- {name: payment terms, path: $.output.payment_terms, starts_with: Net}
"""

CLASSIFICATION_CHECKS = """
- {name: label, path: $.output.label, equals: {path: $.expected.label}}
- {name: label set, path: $.output.label, one_of: [billing, bug, feature_request, account, other]}
- {name: priority, path: $.output.priority, equals: {path: $.expected.priority},
   normalize: [strip, casefold]}
- {name: product, path: $.output.product, equals: {path: $.expected.product}}
- {name: confidence, path: $.output.confidence, between: [0, 1]}
"""


def extraction_document() -> Any:
    skus = [f"SKU-{i:04d}" for i in range(12)]
    items = [{"sku": s, "qty": i + 1, "unit_price": f"{10 + i}.50"} for i, s in enumerate(skus)]
    output = {
        "invoice_number": "INV-2024-00917",
        "invoice_date": "2024-03-14",
        "due_date": "2024-04-13",
        "vendor": {"name": "Acme  Office Supplies GmbH", "vat_id": "DE123456789"},
        "currency": "EUR",
        "subtotal": "1234.50",
        "tax": "234.56",
        "discount": "0.00",
        "total": "1469.06",
        "line_items": items,
        "po_number": None,
        "payment_terms": "Net 30",
    }
    expected = {
        "invoice_number": "INV-2024-00917",
        "invoice_date": "2024-03-14",
        "due_date": "2024-04-13",
        "vendor": {"name": "ACME Office Supplies GmbH"},
        "subtotal": "1234.50",
        "tax": "234.56",
        "discount": "0",
        "total": "1469.06",
        "line_count": 12,
        "skus": list(reversed(skus)),
    }
    text = json.dumps({"input": {}, "output": output, "expected": expected, "usage": {}})
    # Money as JSON numbers, as the executor's reader would give them.
    text = text.replace('"1234.50"', "1234.50").replace('"234.56"', "234.56")
    text = text.replace('"0.00"', "0.00").replace('"1469.06"', "1469.06").replace('"0"', "0")
    return jsontext.loads(text)


def classification_document() -> Any:
    return jsontext.loads(
        json.dumps(
            {
                "input": {"text": "I was charged twice for my subscription"},
                "output": {
                    "label": "billing",
                    "priority": " High",
                    "product": "payments",
                    "confidence": 0.93,
                },
                "expected": {"label": "billing", "priority": "high", "product": "payments"},
                "usage": {},
            }
        )
    )


_VAT = re2.compile("[A-Z]{2}[0-9A-Z]{8,12}")
_CENT = Decimal("0.01")


def _freeze(value: Any) -> Any:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def extraction_by_hand(doc: Any) -> bool:
    """The same 15 comparisons, written directly (what the DSL competes with)."""
    out, exp = doc["output"], doc["expected"]
    results = [
        out.get("invoice_number") == exp["invoice_number"],
        out.get("invoice_date") == exp["invoice_date"],
        out.get("due_date") == exp["due_date"],
        " ".join(out["vendor"]["name"].casefold().split())
        == " ".join(exp["vendor"]["name"].casefold().split()),
        _VAT.fullmatch(out["vendor"]["vat_id"]) is not None,
        out.get("currency") in ("EUR", "USD", "GBP"),
    ]
    for key in ("subtotal", "tax", "discount", "total"):
        results.append(abs(Decimal(out[key]) - Decimal(exp[key])) <= _CENT)
    results.append(out["total"] > 0)
    results.append(len(out["line_items"]) == exp["line_count"])
    skus = [item["sku"] for item in out["line_items"]]
    results.append(Counter(map(_freeze, skus)) == Counter(map(_freeze, exp["skus"])))
    results.append(out.get("po_number") is None or isinstance(out["po_number"], str))
    results.append(str(out.get("payment_terms", "")).startswith("Net"))
    return all(results)


def classification_by_hand(doc: Any) -> bool:
    out, exp = doc["output"], doc["expected"]
    return all(
        [
            out.get("label") == exp["label"],
            out.get("label") in ("billing", "bug", "feature_request", "account", "other"),
            out.get("priority", "").strip().casefold() == exp["priority"].strip().casefold(),
            out.get("product") == exp["product"],
            0 <= out.get("confidence") <= 1,
        ]
    )


def rate(fn: Callable[[], Any], seconds: float) -> float:
    """Calls per CPU second (process time: other load on the host does not count), best of 3."""
    best = 0.0
    batch = 100
    for _ in range(3):
        count = 0
        start = time.process_time()
        deadline = start + seconds / 3
        while True:
            for _ in range(batch):
                fn()
            count += batch
            now = time.process_time()
            if now >= deadline:
                break
        best = max(best, count / (now - start))
    return best


def measure(
    name: str, source: str, document: Any, by_hand: Callable[[Any], bool], seconds: float
) -> dict[str, Any]:
    parsed = parse_document(source, "bench.yaml")
    checks = compile_checks(parsed.value, document=parsed)
    result = grade(checks, document)
    failed = [r.name for r in result.results if not r.passed]
    assert not failed and by_hand(document), f"{name}: the bench case must pass ({failed})"
    dsl = rate(lambda: grade(checks, document).passed, seconds)
    stored = rate(lambda: [r.to_json() for r in grade(checks, document).results], seconds)
    hand = rate(lambda: by_hand(document), seconds)
    return {
        "case": name,
        "dsl_cases_per_s": round(dsl),
        "dsl_with_to_json_cases_per_s": round(stored),
        "hand_written_cases_per_s": round(hand),
        "ratio_dsl_to_hand": round(dsl / hand, 3),
        "ratio_with_to_json_to_hand": round(stored / hand, 3),
        "us_per_case": round(1e6 / dsl, 1),
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows = [
        measure(
            "extraction (15 checks)",
            EXTRACTION_CHECKS,
            extraction_document(),
            extraction_by_hand,
            args.seconds,
        ),
        measure(
            "classification (5 checks)",
            CLASSIFICATION_CHECKS,
            classification_document(),
            classification_by_hand,
            args.seconds,
        ),
    ]
    if args.json:
        print(json.dumps({"benchmark": "checks", "rows": rows}, indent=2))
        return
    for row in rows:
        print(
            f"{row['case']:<28} dsl {row['dsl_cases_per_s']:>8,}/s ({row['us_per_case']} µs)  "
            f"+to_json {row['dsl_with_to_json_cases_per_s']:>7,}/s  "
            f"hand {row['hand_written_cases_per_s']:>8,}/s  "
            f"ratio {row['ratio_dsl_to_hand']:.3f} "
            f"({row['ratio_with_to_json_to_hand']:.3f} with to_json)"
        )


if __name__ == "__main__":
    main()
