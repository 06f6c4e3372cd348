"""Every store keeps ``MemoryStore``'s promises: namespaced put/get/delete, values
round-tripped exactly, and prefix search ordered by namespace then key, with a limit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from plait.store import Store, StoreItem


@pytest.fixture
def store(store_backend: Any) -> Store:
    made: Store = store_backend.make()
    return made


VALUE = {"text": "prefers métric ✓", "list": [1, 2.5, None, True], "nested": {"a": {}}}


def test_put_get_round_trip(store: Store) -> None:
    assert store.get(("users", "u1"), "prefs") is None
    store.put(("users", "u1"), "prefs", VALUE)
    assert store.get(("users", "u1"), "prefs") == StoreItem(("users", "u1"), "prefs", VALUE)
    for value in (None, 0, "plain", [1, [2]], 2**62, -1.5):
        store.put(("scalars",), "v", value)
        item = store.get(("scalars",), "v")
        assert item is not None and item.value == value


def test_put_replaces_and_returned_values_are_copies(store: Store) -> None:
    store.put(("ns",), "k", {"n": 1})
    store.put(("ns",), "k", {"n": 2})
    item = store.get(("ns",), "k")
    assert item is not None and item.value == {"n": 2}
    item.value["n"] = 99
    again = store.get(("ns",), "k")
    assert again is not None and again.value == {"n": 2}


def test_namespaces_are_separate(store: Store) -> None:
    store.put(("a",), "k", 1)
    store.put(("a", "b"), "k", 2)
    store.put(("ab",), "k", 3)
    store.put((), "k", 4)
    assert [store.get(ns, "k") for ns in [("a",), ("a", "b"), ("ab",), ()]] == [
        StoreItem(("a",), "k", 1),
        StoreItem(("a", "b"), "k", 2),
        StoreItem(("ab",), "k", 3),
        StoreItem((), "k", 4),
    ]
    assert store.get(("b",), "k") is None
    assert store.get(("a",), "other") is None


def test_delete(store: Store) -> None:
    store.put(("ns",), "k", 1)
    store.put(("ns",), "keep", 2)
    store.delete(("ns",), "k")
    store.delete(("ns",), "k")  # absent: a no-op
    store.delete(("elsewhere",), "k")
    assert store.get(("ns",), "k") is None
    assert store.search(("ns",)) == [StoreItem(("ns",), "keep", 2)]


def _fill(store: Store) -> None:
    for ns, key in [
        (("users", "u2"), "b"),
        (("users", "u1"), "z"),
        (("users",), "top"),
        (("users", "u1"), "a"),
        (("users", "u1", "deep"), "x"),
        (("usersX",), "not-under-users"),
        (("user",), "shorter"),
        (("teams", "t1"), "k"),
    ]:
        store.put(ns, key, f"{'/'.join(ns)}:{key}")


def test_search_by_prefix_orders_by_namespace_then_key(store: Store) -> None:
    _fill(store)
    found = store.search(("users",), limit=100)
    assert [(i.namespace, i.key) for i in found] == [
        (("users",), "top"),
        (("users", "u1"), "a"),
        (("users", "u1"), "z"),
        (("users", "u1", "deep"), "x"),
        (("users", "u2"), "b"),
    ]
    assert found[1].value == "users/u1:a"
    assert [(i.namespace, i.key) for i in store.search(("users", "u1"))] == [
        (("users", "u1"), "a"),
        (("users", "u1"), "z"),
        (("users", "u1", "deep"), "x"),
    ]
    assert store.search(("nobody",)) == []


def test_search_limit_and_empty_prefix(store: Store) -> None:
    _fill(store)
    assert [(i.namespace, i.key) for i in store.search(("users",), limit=2)] == [
        (("users",), "top"),
        (("users", "u1"), "a"),
    ]
    assert store.search(("users",), limit=0) == []
    everything = store.search((), limit=100)
    assert len(everything) == 8
    assert [(i.namespace, i.key) for i in everything][:3] == [
        (("teams", "t1"), "k"),
        (("user",), "shorter"),
        (("users",), "top"),
    ]
    assert len(store.search(())) == 8  # the default limit is 10


def test_unusual_namespace_parts_keep_python_tuple_order(store: Store) -> None:
    names = [("a", ""), ("a",), ("a\x01",), ("a", "\x00"), ("é",), ("a b",), ("",), ("Z",)]
    for ns in names:
        store.put(ns, "k", list(ns))
    assert [i.namespace for i in store.search((), limit=100)] == sorted(names)
    assert [i.namespace for i in store.search(("a",), limit=100)] == [
        ("a",),
        ("a", ""),
        ("a", "\x00"),
    ]


def test_concurrent_puts_from_threads(store_backend: Any) -> None:
    clients = [store_backend.make() for _ in range(6)]

    def writer(index: int) -> None:
        for k in range(20):
            clients[index].put(("w", str(index)), f"k{k:02d}", k)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = clients[0].search(("w",), limit=1000)
    assert len(found) == 120
    assert [i.value for i in found if i.namespace == ("w", "3")] == list(range(20))
