"""The lazily loaded public faces of evals and evals.suites (PEP 562).

They must export exactly what they did when every name was imported eagerly:
each name of __all__ resolves to the object its home module defines, and an
unknown name is still an AttributeError (and an ImportError for `from`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

import evals
import evals.suites
from tests._fresh import loaded_after


def test_evals_names_resolve_to_their_home_modules() -> None:
    assert set(evals._HOMES) == set(evals.__all__)
    assert len(evals.__all__) == len(set(evals.__all__))
    for name in evals.__all__:
        home = importlib.import_module(evals._HOMES[name])
        assert getattr(evals, name) is getattr(home, name), name
        assert name in dir(evals)


def test_evals_suites_names_all_resolve() -> None:
    from evals.suites import _install

    for name in evals.suites.__all__:
        assert getattr(evals.suites, name) is not None, name
        assert name in dir(evals.suites)
    for name in evals.suites._STORE_NAMES:
        assert name in evals.suites.__all__
        assert getattr(evals.suites, name) is getattr(_install, name)


def test_from_import_still_works() -> None:
    from evals import make_plan, practice
    from evals._plan import make_plan as plan_home
    from evals._practice import practice as practice_home
    from evals.suites import install_suite
    from evals.suites._install import install_suite as install_home

    assert (make_plan, practice, install_suite) == (plan_home, practice_home, install_home)


@pytest.mark.parametrize("module", [evals, evals.suites])
def test_unknown_names_are_still_errors(module: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(module, "nope")  # noqa: B009 - the attribute is the point
    with pytest.raises(AttributeError):
        getattr(module, "_private")  # noqa: B009
    with pytest.raises(ImportError):
        exec(f"from {module.__name__} import nope", {})


def test_importing_evals_loads_no_store() -> None:
    code = (
        "import evals, evals.suites\n"
        "from evals import FixtureCache, load_suite, practice\n"
        "from evals.suites import TrustStore"
    )
    watched = ("sqlalchemy", "records", "evals._runner", "evals._plan", "evals.suites._install")
    assert loaded_after(code, watched) == []
