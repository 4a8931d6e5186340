"""SortedIds and PendingMap against sortedcontainers' SortedList/SortedDict as the model."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict, SortedList

from node.engine.sorted_ids import PendingMap, SortedIds

# Small chunks so that splits, chunk removals and cross-chunk ranges happen in small examples.
SMALL_LOAD = 4

# Small IDs, any ID, and IDs at the edges of the compact keys (ms < 2**42, seq < 2**20).
_EDGE = st.builds(
    lambda ms, seq: (ms << 64) | seq,
    st.sampled_from([0, 1, 5, 2**42 - 1, 2**42, 2**64 - 1]),
    st.sampled_from([0, 1, 7, 2**20 - 1, 2**20, 2**64 - 1]),
)
_ID = st.integers(0, 60) | st.integers(0, 2**128 - 1) | _EDGE
_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "discard", "set", "pop", "del", "range"]), _ID, _ID),
    max_size=300,
)


@settings(max_examples=500)
@given(st.lists(_ID, max_size=40), _OPS)
def test_sorted_ids_agree_with_sorted_list(initial: list[int], ops: list[tuple[str, int, int]]) -> None:
    ids = SortedIds(initial, SMALL_LOAD)
    model = SortedList(set(initial))
    for op, a, b in ops:
        if op in ("add", "set"):
            assert ids.add(a) == (a not in model)
            if a not in model:
                model.add(a)
        elif op in ("discard", "pop", "del"):
            assert ids.discard(a) == (a in model)
            model.discard(a)
        else:
            lo, hi = min(a, b), max(a, b)
            assert list(ids.irange(lo, hi)) == list(model.irange(lo, hi))
            assert list(ids.irange(lo)) == list(model.irange(lo))
        assert (a in ids) == (a in model)
        ids._check()
    assert list(ids) == list(model)
    assert len(ids) == len(model) and bool(ids) == bool(model)
    if model:
        assert (ids.first(), ids.last()) == (model[0], model[-1])
    copy = ids.copy()
    copy.add(2**128)
    assert list(ids) == list(model)


@settings(max_examples=500)
@given(st.lists(st.tuples(_ID, st.integers()), max_size=40), _OPS)
def test_pending_map_agrees_with_sorted_dict(initial: list[tuple[int, int]], ops: list[tuple[str, int, int]]) -> None:
    pel = PendingMap(initial, SMALL_LOAD)
    model = SortedDict(initial)
    for op, a, b in ops:
        if op in ("add", "set"):
            pel[a] = b
            model[a] = b
        elif op == "pop" or op == "discard":
            assert pel.pop(a) == model.pop(a, None)
        elif op == "del":
            if a in model:
                del pel[a]
                del model[a]
            else:
                with pytest.raises(KeyError):
                    del pel[a]
        elif model and a % 3 == 0:
            # first/last trim the ghosts they step over.
            assert (pel.first(), pel.last()) == (model.keys()[0], model.keys()[-1])
        else:
            assert list(pel.irange(min(a, b), max(a, b))) == list(model.irange(min(a, b), max(a, b)))
        assert pel.get(a) == model.get(a) and (a in pel) == (a in model)
        pel._check()
    assert list(pel.items()) == list(model.items())
    assert list(pel.keys()) == list(model.keys()) and list(pel.values()) == list(model.values())
    assert len(pel) == len(model)
    if model:
        assert (pel.first(), pel.last()) == (model.keys()[0], model.keys()[-1])
    copy = pel.copy()
    copy[2**128] = 0
    assert list(pel.items()) == list(model.items())


def test_pending_map_sweeps_removed_keys_out_of_its_order() -> None:
    # Random pops of a large map (XACK of random pending IDs): the order keeps about as many
    # removed keys as live ones, not all of them.
    rnd = random.Random(7)
    n = 20_000
    pel = PendingMap(((i, i) for i in range(n)), 100)
    alive = list(range(n))
    rnd.shuffle(alive)
    for key in alive[: n * 9 // 10]:
        pel.pop(key)
    live = len(pel)
    assert live == n // 10
    assert len(pel._ids) <= 2 * live + 100 * 4
    pel._check()
    assert list(pel) == sorted(alive[n * 9 // 10 :])
