"""gateway.service's public face loads its names on first use (PEP 562): each name of
__all__ is the object its home module defines, an unknown name is still an error, and
importing the face loads none of the store."""

from __future__ import annotations

import importlib

import pytest

import gateway.service
from tests._fresh import loaded_after


def test_every_name_resolves_to_its_home() -> None:
    assert set(gateway.service._HOMES) == set(gateway.service.__all__)
    assert len(gateway.service.__all__) == len(set(gateway.service.__all__))
    for name, home in gateway.service._HOMES.items():
        assert getattr(gateway.service, name) is getattr(importlib.import_module(home), name)
        assert name in dir(gateway.service)


def test_an_unknown_name_is_still_an_error() -> None:
    with pytest.raises(AttributeError):
        gateway.service.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from gateway.service import no_such_name", {})


def test_the_face_loads_no_store_until_a_name_is_read() -> None:
    heavy = ("sqlalchemy", "records", "evals", "gateway.service._store")
    assert loaded_after("import gateway.service", heavy) == []
    assert loaded_after("import gateway.service\ngateway.service.StoreService", heavy) == [*heavy]
