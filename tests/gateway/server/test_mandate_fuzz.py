"""Mandates under hypothesis: every document either loads or fails with a located error.

Mutations of the shipped example mandates (keys deleted, values replaced with
other types, unknown keys, odd text, huge and deep values), as files and as
API bodies: never another exception, and a refused grant changes nothing.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway.mandates import load_mandate, mandate_from_dict
from gateway.operations import MANDATES_LIST, MandatesQuery
from gateway.service import StoreService
from records import Store
from schema.documents import load_document
from schema.errors import HolonError, InputError
from schema.jsontext import dumps
from tests._hypothesis import derandomized

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples" / "mandates").glob("*.yaml"))
BASES = [load_document(p).value for p in EXAMPLES]
TRIED = {"documents": 0, "files": 0}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.decimals(allow_nan=False, allow_infinity=False, places=4),
    st.text(max_size=40),
    st.sampled_from(
        ["", "0.05", "-1", "1e400", "acme/*", "../../etc", "\x00", "2027-13-45T00:00:00Z"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    document = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["delete", "replace", "add", "nest"]))
        keys = sorted(document)
        if action == "delete" and keys:
            document.pop(draw(st.sampled_from(keys)))
        elif action == "replace" and keys:
            document[draw(st.sampled_from(keys))] = draw(values)
        elif action == "add":
            document[draw(st.text(min_size=1, max_size=12))] = draw(values)
        else:
            deep: Any = draw(scalars)
            for _ in range(draw(st.integers(min_value=1, max_value=200))):
                deep = [deep]
            document[draw(st.sampled_from(keys or ["x"]))] = deep
    return document


FUZZ = derandomized(80)


@FUZZ
@given(document=mutated())
def test_documents_load_or_fail_with_a_path(document: Any) -> None:
    TRIED["documents"] += 1
    try:
        mandate_from_dict(document)
    except InputError as exc:
        assert exc.code in ("invalid_mandate", "invalid_input")
        assert exc.location.path is not None or exc.location.line is not None
        assert "Traceback" not in str(exc)


@FUZZ
@given(text=st.one_of(st.text(max_size=300), mutated().map(dumps)), trailer=st.binary(max_size=8))
def test_files_load_or_fail_with_file_and_line(
    text: str, trailer: bytes, tmp_path_factory: Any
) -> None:
    TRIED["files"] += 1
    path = tmp_path_factory.mktemp("mandate") / "m.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass") + trailer)
    try:
        load_mandate(path)
    except InputError as exc:
        assert exc.location.file == str(path)
    except HolonError as exc:  # e.g. an unreadable file
        assert exc.exit_code in (2, 3)


def test_a_refused_grant_changes_nothing(store: Store, tmp_path: Path) -> None:
    client = StoreService(store, tmp_path)
    ops = client.mandates
    ops.grant(BASES[0])
    listing = MandatesQuery(include_revoked=True)
    before = client.call(MANDATES_LIST, listing)
    bad = [
        {**BASES[0], "max_cost_per_call_usd": 0.05},
        {**BASES[0], "budget": {"amount_usd": "1"}},
        {**BASES[0], "id": "Not An Id"},
        {k: v for k, v in BASES[0].items() if k != "holder"},
    ]
    for document in bad:
        try:
            ops.grant(document)
        except InputError as exc:
            assert exc.code == "invalid_mandate"
        else:
            raise AssertionError(f"granted {document}")
    assert client.call(MANDATES_LIST, listing) == before
