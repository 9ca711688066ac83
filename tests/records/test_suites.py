"""The suite registry on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest

from records import Store
from schema.errors import Conflict, NotFound
from tests.records._documents import suite_install as install


def test_versions_side_by_side_first_active(store: Store) -> None:
    status, first = store.suites.install(install(1))
    assert status == "installed" and first.active
    status, second = store.suites.install(install(2, "b" * 64))
    assert status == "installed" and not second.active
    assert store.suites.get("tiny").version == 1
    assert store.suites.activate("tiny", 2).active
    assert store.suites.get("tiny").version == 2
    assert [v.version for v in store.suites.versions("tiny")] == [1, 2]
    assert [s.version for s in store.suites.list()] == [2]
    assert store.suites.certified_capabilities() == {"ticket.classify"}
    _, third = store.suites.install(install(3, "c" * 64), activate=True)
    assert third.active


def test_same_version_other_digest_is_refused(store: Store) -> None:
    store.suites.install(install(1))
    assert store.suites.install(install(1))[0] == "unchanged"
    with pytest.raises(Conflict, match="another digest"):
        store.suites.install(install(1, "f" * 64))
    assert store.suites.get("tiny").suite_digest == "a" * 64


def test_unknown_suites_and_versions(store: Store) -> None:
    with pytest.raises(NotFound):
        store.suites.get("nope")
    store.suites.install(install(1))
    with pytest.raises(NotFound):
        store.suites.activate("tiny", 9)
    assert store.suites.for_capability("invoice.extract") is None


def test_holdout_secret_is_created_once_and_kept(store: Store) -> None:
    secrets: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: secrets.append(store.suites.holdout_secret()))
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(secrets)) == 1 and len(secrets[0]) == 32
    assert store.suites.holdout_secret() == secrets[0]


def test_rotation_starts_a_new_epoch(store: Store) -> None:
    store.suites.install(install(1))
    assert store.suites.get("tiny").holdout_epoch == 0
    assert store.suites.rotate_holdout("tiny").holdout_epoch == 1
    assert store.suites.get("tiny").holdout_epoch == 1
