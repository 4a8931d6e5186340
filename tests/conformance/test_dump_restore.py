"""DUMP and RESTORE against Debian's redis-server 7.0 (RDB 10): the same commands build the
same key on both, and Rill (with `rdb-version 10`) DUMPs the bytes redis-server DUMPs, up
to the two servers' clock readings (consumer and delivery times, tests/unit/rdb/compare.py).
A payload DUMPed by either RESTOREs on the other into a value that DUMPs the same again;
RESTORE's options, errors and TTLs answer byte for byte.

The RDB 11 side (Redis 7.2) is checked against payloads of a real 7.2.4 in
tests/unit/rdb/test_payload_fixtures.py; this 7.0 refuses RDB 11, as Redis 7.0 does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.conformance.harness import Pair
from tests.unit.rdb.compare import assert_same_payload
from tests.unit.rdb.make_fixtures import DEFAULTS
from tests.unit.rdb.scenarios import Scenario, scenarios

SCENARIOS = [s for s in scenarios() if not s.only_72]


def _bulk(reply: bytes) -> bytes:
    """The bytes of a RESP bulk-string reply."""
    head, _, rest = reply.partition(b"\r\n")
    assert head[:1] == b"$" and int(head[1:]) >= 0, reply[:80]
    return rest[: int(head[1:])]


@pytest.fixture
def rdb10(pair: Pair) -> Iterator[Pair]:
    """The pair, Rill writing RDB 10 payloads as this 7.0 does (set back afterwards: the node
    is shared by the session)."""
    pair.rill.call("CONFIG", "SET", "rdb-version", "10")
    yield pair
    for name, value in DEFAULTS:
        pair.oracle.call("CONFIG", "SET", name, value)
        pair.rill.call("CONFIG", "SET", name, value)
    pair.rill.call("CONFIG", "SET", "rdb-version", "11")


def _build(pair: Pair, scenario: Scenario) -> None:
    for name, value in DEFAULTS + scenario.config:
        pair.check("CONFIG", "SET", name, value)
    for command in scenario.commands:
        pair.both(*command)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_dump_is_redis_byte_for_byte(rdb10: Pair, scenario: Scenario) -> None:
    started = int(time.time() * 1000)
    _build(rdb10, scenario)
    expected = _bulk(rdb10.oracle.call("DUMP", scenario.key))
    got = _bulk(rdb10.rill.call("DUMP", scenario.key))
    assert_same_payload(got, expected, started - 1000, int(time.time() * 1000) + 1000)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_payload_restores_on_the_other_server(rdb10: Pair, scenario: Scenario) -> None:
    _build(rdb10, scenario)
    from_redis = _bulk(rdb10.oracle.call("DUMP", scenario.key))
    from_rill = _bulk(rdb10.rill.call("DUMP", scenario.key))
    assert rdb10.oracle.call("RESTORE", "copy", "0", from_rill) == b"+OK\r\n"
    assert rdb10.rill.call("RESTORE", "copy", "0", from_redis) == b"+OK\r\n"
    # Each server's copy is now the other's value, which DUMPs as its original did.
    assert _bulk(rdb10.oracle.call("DUMP", "copy")) == from_rill
    assert _bulk(rdb10.rill.call("DUMP", "copy")) == from_redis
    if scenario.key == "s":
        rdb10.check("XRANGE", "copy", "-", "+")
        rdb10.check("XLEN", "copy")


def test_dump_of_a_missing_key_is_nil(pair_any: Pair) -> None:
    pair_any.check("DUMP", "nope")


def test_restore_options_and_errors(rdb10: Pair) -> None:
    rdb10.check("SET", "k", "some value")
    payload = _bulk(rdb10.oracle.call("DUMP", "k"))
    damaged = payload[:3] + bytes([payload[3] ^ 0x20]) + payload[4:]
    # RDB 11 without its CRC fixed: both refuse it (7.0 for its version too, Rill takes RDB 11).
    rdb11 = payload[:-10] + (11).to_bytes(2, "little") + payload[-8:]
    rdb10.check_all([
        ("RESTORE", "k", "0", payload),
        ("RESTORE", "k", "0", payload, "BOGUS"),
        ("RESTORE", "k", "x", payload, "REPLACE"),
        ("RESTORE", "k", "-5", payload, "REPLACE"),
        ("RESTORE", "n", "0", b"short"),
        ("RESTORE", "n", "0", damaged),
        ("RESTORE", "n", "0", rdb11),
        ("RESTORE", "n", "0", payload, "IDLETIME"),
        ("RESTORE", "n", "0", payload, "IDLETIME", "-1"),
        ("RESTORE", "n", "0", payload, "IDLETIME", "x"),
        ("RESTORE", "n", "0", payload, "FREQ", "256"),
        ("RESTORE", "n", "0", payload, "FREQ", "1", "IDLETIME", "2"),
        ("RESTORE", "n", "0", payload, "IDLETIME", "2", "FREQ", "1"),
        ("RESTORE", "n", "0", payload, "FREQ", "0"),
        ("GET", "n"),
        ("RESTORE", "k", "0", payload, "REPLACE", "IDLETIME", "100"),
        ("GET", "k"),
        ("RESTORE", "t", "100000", payload),
        ("RESTORE", "a", "4102444800000", payload, "ABSTTL"),
        ("PEXPIRETIME", "a"),
        ("RESTORE", "past", "1", payload, "ABSTTL"),
        ("EXISTS", "past"),
        ("RESTORE", "k", "1", payload, "ABSTTL", "REPLACE"),
        ("EXISTS", "k"),
        ("RESTORE", "w", "0", payload),
        ("TYPE", "w"),
        ("DEL", "w"),
    ])
    ttl_redis = int(rdb10.oracle.call("PTTL", "t")[1:-2])
    ttl_rill = int(rdb10.rill.call("PTTL", "t")[1:-2])
    assert 95_000 < ttl_rill <= 100_000 and abs(ttl_redis - ttl_rill) < 5_000


def test_restore_replace_changes_the_keys_type(rdb10: Pair) -> None:
    rdb10.check("XADD", "s", "1-1", "f", "v")
    rdb10.check("SET", "str", "x")
    payload = _bulk(rdb10.oracle.call("DUMP", "str"))
    rdb10.check("RESTORE", "s", "0", payload, "REPLACE")
    rdb10.check("TYPE", "s")
    rdb10.check("XLEN", "s")
