"""Scenarios for the DUMP tests: each a configuration, the commands that build one key, and
that key. Explicit IDs only, so any server builds the same value; every command's behaviour
is the same in Redis 7.0 and 7.2 (the payload fixtures come from both, and the differential
test runs them against Debian's 7.0), except where `only_72` says so.

`make_fixtures.py` ran them against redis-server 7.0.15 and 7.2.4 to write data/*.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Command = list[str]


@dataclass(frozen=True)
class Scenario:
    name: str
    key: str
    commands: list[Command]
    config: list[tuple[str, str]] = field(default_factory=list)
    only_72: bool = False  # relies on Redis 7.2 behaviour (7.0 differs)


def _entries(key: str, n: int, start_ms: int = 1, fields: tuple[str, ...] = ("f", "g"), value: str = "v") -> list[Command]:
    out = []
    for i in range(n):
        args = []
        for f in fields:
            args += [f, f"{value}{i}"]
        out.append(["XADD", key, f"{start_ms + i}-1", *args])
    return out


def _strings() -> list[Scenario]:
    values = {
        "short": "hello",
        "empty": "",
        "int8": "-12",
        "int16": "1234",
        "int32": "-2147483648",
        "int_too_big": "2147483648",
        "int64": "9223372036854775807",
        "zero_padded": "007",
        "minus_zero": "-0",
        "twenty": "abcdefghijabcdefghij",
        "twenty_one": "aaaaaaaaaaaaaaaaaaaaa",
        "compressible": "abc" * 200,
        "incompressible": "".join(chr(33 + (i * 7919) % 90) for i in range(300)),
    }
    return [Scenario(f"string_{name}", "k", [["SET", "k", v]]) for name, v in values.items()]


def scenarios() -> list[Scenario]:
    s = _strings()
    s.append(Scenario("stream_one_node", "s", _entries("s", 10)))
    s.append(Scenario("stream_three_nodes", "s", _entries("s", 250)))
    s.append(Scenario("stream_small_nodes", "s", _entries("s", 40), config=[("stream-node-max-bytes", "120")]))
    s.append(Scenario("stream_unlimited_entries", "s", _entries("s", 300), config=[("stream-node-max-entries", "0")]))
    mixed = [
        ["XADD", "s", "1-1", "a", "1", "b", "2"],
        ["XADD", "s", "1-2", "a", "-5", "b", "123456789012345"],
        ["XADD", "s", "2-0", "x", "y"],
        ["XADD", "s", "3-0", "a", "v", "b", "w", "c", "z"],
        ["XADD", "s", "4-0", "a", "x" * 200, "b", "y" * 5000],
        ["XADD", "s", "5-7", "12", "0", "-3", "9223372036854775807"],
        ["XADD", "s", "4294967301-0", "a", "far", "b", "ms"],
        ["XADD", "s", "4294967301-9999999999", "a", "big", "b", "seq"],
        ["XADD", "s", "18446744073709551615-18446744073709551615", "a", "max", "b", "id"],
    ]
    s.append(Scenario("stream_mixed_fields", "s", mixed))
    deletions = _entries("s", 250) + [
        ["XDEL", "s", "1-1", "2-1", "150-1"],
        ["XDEL", *(["s"] + [f"{i}-1" for i in range(101, 201)])],  # a whole middle node
        ["XDEL", "s", "250-1"],
        ["XTRIM", "s", "MAXLEN", "=", "120"],
        ["XSETID", "s", "300-0", "ENTRIESADDED", "400", "MAXDELETEDID", "260-0"],
    ]
    s.append(Scenario("stream_deletions", "s", deletions))
    s.append(Scenario("stream_approx_trim", "s", _entries("s", 350) + [["XTRIM", "s", "MAXLEN", "~", "120"]]))
    s.append(Scenario("stream_minid_trim", "s", _entries("s", 250) + [["XTRIM", "s", "MINID", "=", "130-0"]]))
    s.append(Scenario("stream_empty_group", "s", [["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]]))
    s.append(Scenario("stream_all_deleted", "s", _entries("s", 3) + [["XDEL", "s", "1-1", "2-1", "3-1"]]))
    groups = _entries("s", 120) + [
        ["XGROUP", "CREATE", "s", "g1", "0"],
        ["XGROUP", "CREATE", "s", "123", "50-1"],
        ["XGROUP", "CREATE", "s", "a-group-with-a-long-name-for-lzf", "$"],
        ["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "30", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "20", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g1", "42", "COUNT", "5", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "123", "alice", "COUNT", "10", "STREAMS", "s", ">"],
        ["XACK", "s", "g1", "1-1", "3-1", "40-1"],
        ["XCLAIM", "s", "g1", "bob", "0", "2-1", "4-1", "TIME", "1700000000000", "RETRYCOUNT", "7"],
        ["XGROUP", "CREATECONSUMER", "s", "g1", "idle-consumer"],
        ["XDEL", "s", "5-1"],
        ["XGROUP", "SETID", "s", "123", "60-1", "ENTRIESREAD", "60"],
    ]
    s.append(Scenario("stream_groups", "s", groups))
    s.append(Scenario("stream_group_unknown_read", "s", _entries("s", 20) + [
        ["XDEL", "s", "10-1"],
        ["XGROUP", "CREATE", "s", "g", "5-1"],
    ]))
    return s
