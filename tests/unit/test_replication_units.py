"""The units a replica applies and logs: `check_units` accepts only whole RESP commands and
whole MULTI/EXEC units (before anything is applied), `command_end` delimits each, and the effect log keeps every unit
boundary a valid starting point (units outside database 0 name it) while a replica logs its
primary's bytes verbatim instead of its own re-encoding."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import hiredis
import pytest

from node.log import scan as log_scan
from node.log.effect_log import EffectLog
from node.log.encode import encode_command

# The C scanner of the native build (make test builds it) and the Python fallback: the same
# rules, so both must give the same answers.
_SCANNERS = [
    pytest.param((log_scan.check_units, log_scan.command_end), id="native"),
    pytest.param((log_scan._check_units, log_scan._command_end), id="python"),
]
Scanner = tuple[Callable[[bytes], "str | None"], Callable[[bytes, int], int]]


def _units(*commands: list[bytes]) -> bytes:
    return b"".join(encode_command(c) for c in commands)


def test_the_native_scanner_is_built_unless_running_pure_python() -> None:
    pure = os.environ.get("RILL_PURE_PYTHON") == "1"
    assert (log_scan._NATIVE_CHECK is None, log_scan._NATIVE_END is None) == (pure, pure)


def _split(data: bytes, command_end: Callable[[bytes, int], int]) -> list[list[bytes]]:
    commands, pos = [], 0
    while pos < len(data):
        end = command_end(data, pos)
        reader = hiredis.Reader()
        reader.feed(data, pos, end - pos)
        commands.append(reader.gets())
        assert reader.gets() is False  # exactly one command up to `end`
        pos = end
    return commands


@pytest.mark.parametrize("scanner", _SCANNERS)
def test_whole_units_pass_and_split_into_their_commands(scanner: Scanner) -> None:
    check_units, command_end = scanner
    commands = [[b"XADD", b"s", b"1-1", b"f", b"v"], [b"MULTI"], [b"XACK", b"s", b"g", b"1-1"], [b"EXEC"],
                [b"SET", b"k", b"x" * 300, b"\r\n"], [b""]]
    data = _units(*commands)
    assert check_units(data) is None
    assert _split(data, command_end) == commands
    assert check_units(b"") is None


@pytest.mark.parametrize("scanner", _SCANNERS)
def test_multi_and_exec_are_known_in_any_case(scanner: Scanner) -> None:
    check_units, _ = scanner
    assert check_units(_units([b"multi"], [b"EXPIRE", b"k", b"1"], [b"Exec"], [b"mUlTi"], [b"eXeC"])) is None
    assert check_units(_units([b"mUlTi"], [b"MULTI"], [b"exec"])) == "nested MULTI in the log"


@pytest.mark.parametrize("scanner", _SCANNERS)
@pytest.mark.parametrize("data", [
    _units([b"XADD", b"s", b"1-1", b"f", b"v"])[:-3],  # cut inside a command
    _units([b"XADD", b"s", b"1-1", b"f", b"v"])[:-1],  # cut inside the last CRLF
    _units([b"MULTI"], [b"XADD", b"s", b"1-1", b"f", b"v"]),  # a transaction without its EXEC
    _units([b"EXEC"]),
    _units([b"MULTI"], [b"MULTI"], [b"EXEC"]),
    _units([b"multi"], [b"Multi"], [b"exec"]),
    _units([b"exec"]),
    b"*2\r\n$4\r\nXADD\r\n:1\r\n",  # an argument that is not a string
    b"*1\r\n$-1\r\n",  # a null argument
    b"*1\r\n*1\r\n$1\r\na\r\n",  # a nested array
    b"*1\r\n$3\r\nabcXY",  # a string not closed by CRLF
    b"*01\r\n$1\r\na\r\n",  # not canonical
    b"*1\r\n$01\r\na\r\n",
    b"*1\r\n$+1\r\na\r\n",
    b"*1\r\n$1\r\na\r\n*1",
    b"*1234567890123456789\r\n",  # a count too large to be real
    b"+OK\r\n",  # not a command
    b"*0\r\n",
    b":1\r\n",
    b"garbage",
])
def test_anything_but_whole_units_is_refused(scanner: Scanner, data: bytes) -> None:
    check_units, _ = scanner
    assert check_units(data) is not None


@pytest.mark.parametrize("scanner", _SCANNERS)
def test_random_cuts_and_flips_are_refused_or_still_whole_commands(scanner: Scanner) -> None:
    """Whatever a damaged batch looks like, the scanner either refuses it or it really is
    whole commands (hiredis reads back exactly what command_end delimits)."""
    check_units, command_end = scanner
    rng = random.Random(5)
    data = _units(*[[b"XADD", b"s%d" % i, b"%d-0" % i, b"f", b"v" * (i % 20)] for i in range(30)])
    for _ in range(2000):
        damaged = bytearray(data[: rng.randrange(len(data) + 1)])
        if damaged and rng.random() < 0.5:
            damaged[rng.randrange(len(damaged))] = rng.choice(b"*$:\r\n0123456789aX")
        if check_units(bytes(damaged)) is None:
            assert _units(*_split(bytes(damaged), command_end)) == bytes(damaged)


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
    with log.applying_primary_units():
        log.append(0, [b"SET", b"b", b"1"])  # the replica's own re-encoding of an applied effect
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
