"""The units a replica applies and logs: `parse_units` accepts only whole RESP commands and
whole MULTI/EXEC units (before anything is applied), and the effect log keeps every unit
boundary a valid starting point (units outside database 0 name it) while a replica logs its
primary's bytes verbatim instead of its own re-encoding."""

from __future__ import annotations

import pytest

from node.server.effects import EffectLog
from node.server.replication_node import ApplyError, parse_units
from node.server.resp import encode_command


def _units(*commands: list[bytes]) -> bytes:
    return b"".join(encode_command(c) for c in commands)


def test_parse_units_returns_the_commands_of_whole_units() -> None:
    data = _units([b"XADD", b"s", b"1-1", b"f", b"v"], [b"MULTI"], [b"XACK", b"s", b"g", b"1-1"], [b"EXEC"])
    assert parse_units(data) == [[b"XADD", b"s", b"1-1", b"f", b"v"], [b"MULTI"], [b"XACK", b"s", b"g", b"1-1"], [b"EXEC"]]


def test_parse_units_knows_multi_and_exec_in_any_case() -> None:
    data = _units([b"multi"], [b"EXPIRE", b"k", b"1"], [b"Exec"], [b"mUlTi"], [b"eXeC"], [b""])
    assert [c[0] for c in parse_units(data)] == [b"multi", b"EXPIRE", b"Exec", b"mUlTi", b"eXeC", b""]


@pytest.mark.parametrize("data", [
    _units([b"XADD", b"s", b"1-1", b"f", b"v"])[:-3],  # cut inside a command
    _units([b"MULTI"], [b"XADD", b"s", b"1-1", b"f", b"v"]),  # a transaction without its EXEC
    _units([b"EXEC"]),
    _units([b"MULTI"], [b"MULTI"], [b"EXEC"]),
    _units([b"multi"], [b"Multi"], [b"exec"]),
    _units([b"exec"]),
    b"*2\r\n$4\r\nXADD\r\n:1\r\n",  # an argument that is not a string
    b"+OK\r\n",  # not a command
    b"*0\r\n",
    b":1\r\n",
])
def test_parse_units_refuses_anything_but_whole_units(data: bytes) -> None:
    with pytest.raises(ApplyError):
        parse_units(data)


def _log() -> tuple[EffectLog, list[tuple[bytes, int]]]:
    log = EffectLog()
    seen: list[tuple[bytes, int]] = []
    log.add_listener(lambda data, end: seen.append((data, end)))
    return log, seen


def test_every_unit_outside_database_zero_names_its_database() -> None:
    log, seen = _log()
    log.append(0, [b"SET", b"a", b"1"])
    log.append(0, [b"SET", b"a", b"2"])
    log.append(3, [b"SET", b"b", b"1"])
    log.append(3, [b"SET", b"b", b"2"])
    log.append(0, [b"SET", b"a", b"3"])
    select0, select3 = encode_command([b"SELECT", b"0"]), encode_command([b"SELECT", b"3"])
    assert [data for data, _ in seen] == [
        select0 + encode_command([b"SET", b"a", b"1"]),
        encode_command([b"SET", b"a", b"2"]),
        select3 + encode_command([b"SET", b"b", b"1"]),
        select3 + encode_command([b"SET", b"b", b"2"]),  # again: a reader may start here
        select0 + encode_command([b"SET", b"a", b"3"]),
    ]
    assert seen[-1][1] == log.offset == sum(len(data) for data, _ in seen)


def test_a_replica_logs_its_primarys_bytes_and_offsets_not_its_own_encoding() -> None:
    log, seen = _log()
    log.append(0, [b"SET", b"a", b"1"])
    log.muted = True
    log.append(0, [b"SET", b"b", b"1"])  # the replica's own re-encoding of an applied effect
    log.muted = False
    primary_bytes = _units([b"SET", b"b", b"1"])
    log.replicated(primary_bytes, 5000)
    assert seen[1:] == [(primary_bytes, 5000)]
    assert log.offset == 5000
    log.append(0, [b"SET", b"c", b"1"])  # promoted: its own first unit names the database
    assert seen[-1][0].startswith(encode_command([b"SELECT", b"0"]))


def test_without_listeners_the_offset_advances_by_the_bytes_a_listener_would_get() -> None:
    recorded, seen = _log()
    bare = EffectLog()
    effects = [(0, [b"XADD", b"s", b"1-1", b"f", b"v" * 300]), (0, [b"SET", b"a", b"1"]),
               (2, [b"SET", b"b", b"2"]), (0, [b"INCR", b"c"])]
    for db_index, argv in effects:
        recorded.append(db_index, argv)
        bare.append(db_index, argv)
        assert bare.offset == recorded.offset == seen[-1][1]
    # Units of several effects (MULTI/EXEC, with the SELECTs they need) are counted too.
    for unit in (effects, effects[:2], effects[2:3] + effects[:1]):
        for log in (recorded, bare):
            log.begin()
            for db_index, argv in unit:
                log.append(db_index, argv)
            log.end()
        assert bare.offset == recorded.offset == seen[-1][1]
    # A listener that arrives later gets the units from then on, at the same offsets.
    late: list[tuple[bytes, int]] = []
    bare.add_listener(lambda data, end: late.append((data, end)))
    recorded.append(0, [b"SET", b"d", b"4"])
    bare.append(0, [b"SET", b"d", b"4"])
    assert late == seen[-1:]
