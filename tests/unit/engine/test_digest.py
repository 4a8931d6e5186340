"""DEBUG DIGEST's signature: Redis's own values for strings and plain streams (taken from a
real redis-server), independence from key order, and sensitivity to every part of a
stream's state, counters included."""

from __future__ import annotations

from node.engine.digest import digest_keyspace, digest_value
from node.engine.ids import make_id
from node.engine.keyspace import Keyspace
from node.engine.stream_value import StreamValue

ZERO = b"0" * 40


def _stream(*entries: tuple[int, int, list[bytes]]) -> StreamValue:
    s = StreamValue()
    for ms, seq, fields in entries:
        s.add(make_id(ms, seq), fields)
    return s


def test_an_empty_keyspace_digests_to_zeros() -> None:
    assert digest_keyspace(Keyspace(16)) == ZERO


def test_values_digest_exactly_as_redis() -> None:
    # redis-server 7.0: SET a b / XADD s 1-1 f v, then DEBUG DIGEST-VALUE a s.
    assert digest_value(b"b") == b"b78559cd22bce6e6df712eb99ce7f3b08e8f8f1f"
    assert digest_value(_stream((1, 1, [b"f", b"v"]))) == b"2ed9a7a81688084b1f7eae33456ef7727d357031"


def test_keyspace_digests_exactly_as_redis() -> None:
    ks = Keyspace(16)
    ks.dbs[0][b"a"] = b"b"
    assert digest_keyspace(ks) == b"479783d7290f02957dfbe3408a858ba13eea1709"
    ks.dbs[0][b"s"] = _stream((1, 1, [b"f", b"v"]))
    assert digest_keyspace(ks) == b"d7e697a1a0bfc1534a4c70caa4f96bcf4a844b22"


def test_key_order_does_not_matter_but_the_database_does() -> None:
    first, second, moved = Keyspace(4), Keyspace(4), Keyspace(4)
    for key in (b"k1", b"k2", b"k3"):
        first.dbs[0][key] = key + b"-value"
    for key in (b"k3", b"k1", b"k2"):
        second.dbs[0][key] = key + b"-value"
    for key in (b"k1", b"k2", b"k3"):
        moved.dbs[1][key] = key + b"-value"
    assert digest_keyspace(first) == digest_keyspace(second)
    assert digest_keyspace(first) != digest_keyspace(moved)


def test_stream_counters_are_covered() -> None:
    plain = _stream((1, 0, [b"f", b"v"]))
    deleted_tail = _stream((1, 0, [b"f", b"v"]), (2, 0, [b"f", b"v"]))
    assert deleted_tail.delete(make_id(2, 0))
    assert list(plain.iter_all()) == list(deleted_tail.iter_all())
    # Same entries; the last ID, entries-added and max-deleted-ID counters differ.
    assert digest_value(plain) != digest_value(deleted_tail)
    bumped = _stream((1, 0, [b"f", b"v"]))
    bumped.entries_added = 5
    assert digest_value(plain) != digest_value(bumped)
    assert digest_value(plain) == digest_value(_stream((1, 0, [b"f", b"v"])))


def test_field_values_and_ids_are_covered() -> None:
    base = digest_value(_stream((1, 0, [b"f", b"v"])))
    assert digest_value(_stream((1, 0, [b"f", b"w"]))) != base
    assert digest_value(_stream((1, 1, [b"f", b"v"]))) != base
    assert digest_value(b"fv") != base


def test_a_stream_digest_continued_after_appends_equals_one_computed_afresh() -> None:
    # DEBUG DIGEST continues a stream's entry chain from its last call: whatever happened
    # in between (appends, deletions, trims), the result is the full computation's.
    keyspace = Keyspace(1)
    stream = _stream(*((1, i, [b"f", b"%d" % i]) for i in range(250)))
    keyspace.dbs[0][b"s"] = stream
    steps = [
        lambda: stream.add(make_id(2, 0), [b"f", b"x"], 100, 4096),
        lambda: stream.add(make_id(3, 0), [b"g", b"y", b"h", b"z"], 100, 4096),
        lambda: stream.delete(make_id(1, 5)),
        lambda: stream.add(make_id(4, 0), [b"f", b"w"], 100, 4096),
        lambda: stream.trim_maxlen(100, False, 0),
        lambda: stream.delete(make_id(4, 0)),  # the last entry goes
        lambda: stream.add(make_id(5, 0), [b"f", b"v"], 100, 4096),
    ]
    for step in steps:
        continued = digest_keyspace(keyspace)
        value = digest_value(stream)
        fresh = stream.copy()  # a copy has no cached chain
        check = Keyspace(1)
        check.dbs[0][b"s"] = fresh
        assert continued == digest_keyspace(check)
        assert value == digest_value(fresh)
        step()
    assert digest_keyspace(keyspace) != continued
