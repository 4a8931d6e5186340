"""The deadline table of one database (`node.engine.expires.Expires`): the expiry rule, the
order in which due keys come out, and its invariants under seeded random changes."""

from __future__ import annotations

import random

from node.engine.expires import Expires
from node.engine.keyspace import Keyspace


def test_a_key_expires_only_once_the_time_is_past_its_deadline() -> None:
    expires = Expires()
    expires.set(b"k", 1000)
    assert not expires.is_expired(b"k", 999)
    assert not expires.is_expired(b"k", 1000)  # keyIsExpired: now > deadline
    assert expires.is_expired(b"k", 1001)
    assert not expires.is_expired(b"other", 10**12)
    assert expires.pop_due(1000, 10) == []
    assert expires.pop_due(1001, 10) == [b"k"]
    assert len(expires) == 0


def test_due_keys_come_out_earliest_first_within_the_limit() -> None:
    expires = Expires()
    for i, when in enumerate([50, 10, 40, 20, 30, 1000]):
        expires.set(b"k%d" % i, when)
    assert expires.pop_due(100, 2) == [b"k1", b"k3"]
    assert expires.pop_due(100, 10) == [b"k4", b"k2", b"k0"]
    assert expires.pop_due(100, 10) == []
    assert list(expires.deadlines) == [b"k5"]
    expires._check()


def test_changed_and_removed_deadlines_are_never_returned() -> None:
    expires = Expires()
    expires.set(b"a", 10)
    expires.set(b"a", 500)  # pushed back
    expires.set(b"b", 10)
    assert expires.remove(b"b")
    assert not expires.remove(b"b")
    expires.set(b"c", 10)
    expires.set(b"c", 5)
    expires.set(b"c", 10)  # the same deadline as an older, stale entry: returned once
    assert expires.pop_due(100, 10) == [b"c"]
    assert expires.get(b"a") == 500
    expires._check()


def test_average_ttl_of_the_remaining_keys() -> None:
    expires = Expires()
    assert expires.average_ttl(0) == 0
    expires.set(b"a", 1000)
    expires.set(b"b", 3000)
    assert expires.average_ttl(0) == 2000
    assert expires.average_ttl(5000) == 0  # all past: never negative
    expires.remove(b"b")
    assert expires.average_ttl(500) == 500


def test_random_changes_keep_the_invariants_and_match_a_plain_dict() -> None:
    rng = random.Random(22)
    expires = Expires()
    model: dict[bytes, int] = {}
    now = 0
    for step in range(20_000):
        key = b"k%d" % rng.randrange(300)
        action = rng.random()
        if action < 0.5:
            when = now + rng.randrange(-50, 500)
            expires.set(key, when)
            model[key] = when
        elif action < 0.7:
            assert expires.remove(key) == (model.pop(key, None) is not None)
        elif action < 0.8:
            now += rng.randrange(0, 30)
            limit = rng.randrange(1, 40)
            due = expires.pop_due(now, limit)
            expected = sorted((w, k) for k, w in model.items() if now > w)[:limit]
            assert sorted(due) == sorted(k for _, k in expected)
            # Earliest first: the deadlines come out in non-decreasing order.
            whens = [model[k] for k in due]
            assert whens == sorted(whens)
            for k in due:
                del model[k]
        else:
            assert expires.get(key) == model.get(key)
        if step % 500 == 0:
            expires._check()
        assert expires.deadlines == model
    expires._check()


def test_keyspace_moves_deadlines_with_databases() -> None:
    keyspace = Keyspace(3)
    keyspace.dbs[0][b"k"] = b"v"
    keyspace.expires[0].set(b"k", 100)
    keyspace.swap(0, 2)
    assert keyspace.expires[2].get(b"k") == 100 and not keyspace.expires[0].deadlines
    assert keyspace.delete(2, b"k") == b"v"
    assert not keyspace.expires[2].deadlines
    keyspace.dbs[1][b"x"] = b"v"
    keyspace.expires[1].set(b"x", 5)
    other = Keyspace(3)
    other.dbs[1][b"y"] = b"w"
    other.expires[1].set(b"y", 7)
    expires_object = keyspace.expires[1]
    keyspace.replace_with(other)
    assert keyspace.expires[1] is expires_object  # sessions keep pointing at it
    assert keyspace.expires[1].deadlines == {b"y": 7} and keyspace.dbs[1] == {b"y": b"w"}
    keyspace.flush(None)
    assert keyspace.volatile_count() == 0 and keyspace.key_count() == 0
