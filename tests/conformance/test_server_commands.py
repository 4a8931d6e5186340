"""Differential tests of the server and admin commands (CONFIG, CLIENT, COMMAND, INFO, DEBUG,
MONITOR, MEMORY, SLOWLOG, LATENCY, FUNCTION, SHUTDOWN's refusals) against redis-server, in
RESP2 and RESP3.

What cannot be equal is compared by shape, never hidden: INFO values (uptime, memory, ids)
differ, so INFO is compared by section titles and by field *names* (Rill reports every field
the oracle does); COMMAND COUNT differs (Rill has no lists, hashes, ...), so COMMAND INFO
is compared command by command over the commands both servers have. The oracle is Redis
7.0, Rill follows 7.2: where 7.2 added something (CLIENT SETINFO, lib-name= in CLIENT LIST)
the test says so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from node.commands.redis_meta import DIFFERS_IN_ORACLE
from tests.conformance.harness import Pair, RawConnection
from tests.conformance.stream_support import R, parse
from tests.conftest import Server, start_redis

# Directives both servers have with the same default (repl-backlog-size, protected-mode and
# loglevel's choices differ on purpose: docs/compatibility.md).
SHARED_DIRECTIVES = [
    "stream-node-max-entries", "stream-node-max-bytes", "maxclients", "timeout", "tcp-keepalive",
    "hz", "proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit",
    "maxmemory", "maxmemory-policy", "appendonly", "appendfsync", "appendfilename",
    "auto-aof-rewrite-percentage", "auto-aof-rewrite-min-size", "aof-load-truncated",
    "slowlog-log-slower-than", "slowlog-max-len", "latency-tracking", "lua-time-limit",
    "busy-reply-threshold", "notify-keyspace-events", "replica-read-only", "slave-read-only",
    "repl-timeout", "repl-ping-replica-period", "min-replicas-to-write", "min-replicas-max-lag",
    "min-slaves-max-lag", "databases", "requirepass", "masterauth", "dbfilename", "daemonize",
    "tcp-backlog", "loglevel", "save",
    # What Sentinel reads from a replica and what a replica announces to its primary.
    "replica-priority", "slave-priority", "replica-announced", "replica-announce-ip",
    "slave-announce-ip", "replica-announce-port", "slave-announce-port",
]

BAD_VALUES = [
    ("stream-node-max-entries", "abc"), ("stream-node-max-entries", "-1"),
    ("stream-node-max-entries", "1.5"), ("stream-node-max-entries", "99999999999999999999999"),
    ("stream-node-max-entries", "007"), ("stream-node-max-bytes", "abc"),
    ("stream-node-max-bytes", "-1"), ("stream-node-max-bytes", "1x"),
    ("maxclients", "0"), ("maxclients", "-1"), ("maxclients", "abc"), ("maxclients", "4294967296"),
    ("timeout", "-1"), ("timeout", "2147483648"), ("hz", "-1"), ("tcp-keepalive", "x"),
    ("proto-max-bulk-len", "10"), ("proto-max-bulk-len", "-1"), ("proto-max-bulk-len", "abc"),
    ("proto-max-bulk-len", ""), ("proto-max-bulk-len", "9223372036854775808"),
    ("client-query-buffer-limit", "1k"), ("maxmemory", "lots"),
    ("maxmemory-policy", "sometimes"), ("appendfsync", "nope"), ("appendonly", "maybe"),
    ("replica-read-only", "2"), ("slave-read-only", "x"), ("slowlog-log-slower-than", "-2"),
    ("repl-timeout", "0"), ("client-output-buffer-limit", "normal 1"),
    ("client-output-buffer-limit", "bogus 1 2 3"), ("client-output-buffer-limit", "normal x 1 1"),
    ("save", "1 2 3"), ("save", "x y"), ("notify-keyspace-events", "KEq"),
    ("replica-priority", "-1"), ("replica-priority", "2147483648"), ("slave-priority", "x"),
    ("replica-announced", "1"), ("replica-announce-port", "65536"), ("slave-announce-port", "-1"),
]


def _config_value(conn: RawConnection, name: str) -> bytes:
    reply = parse(conn.call("CONFIG", "GET", name))
    pairs = _pairs(reply)
    assert len(pairs) == 1, reply
    return pairs[0][1]


def _pairs(reply: R) -> list[tuple[bytes, bytes]]:
    """CONFIG GET's (name, value) pairs from a RESP2 array or a RESP3 map."""
    if reply.kind == "%":
        return [(k.value, v.value) for k, v in reply.value]
    assert reply.kind == "*", reply
    items = [item.value for item in reply.value]
    return list(zip(items[::2], items[1::2]))


def _both(pair: Pair, *args: str) -> None:
    pair.oracle.call(*args)
    pair.rill.call(*args)


# -- CONFIG -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHARED_DIRECTIVES)
def test_config_get_of_a_shared_directive_matches_redis(pair_any: Pair, name: str) -> None:
    pair_any.check("CONFIG", "GET", name)


@pytest.mark.parametrize(
    "pattern", ["stream-node-*", "*read-only", "appendf*", "STREAM-NODE-MAX-[EB]*", "replica-announce*", "slave-announce*", "*-priority"]
)
def test_config_get_glob_matches_the_same_directives(pair_any: Pair, pattern: str) -> None:
    expected, actual = pair_any.both("CONFIG", "GET", pattern)
    # Redis lists matches in hash-table order; the set of pairs is what is specified.
    assert sorted(_pairs(parse(actual))) == sorted(_pairs(parse(expected)))
    assert parse(actual).kind == parse(expected).kind


def test_config_get_exact_name_is_replied_as_spelled_and_deduplicated(pair_any: Pair) -> None:
    pair_any.check("CONFIG", "GET", "MAXCLIENTS")
    pair_any.check("CONFIG", "GET", "maxclients", "MAXCLIENTS", "maxclient*")
    pair_any.check("CONFIG", "GET", "no-such-directive")
    pair_any.check("CONFIG", "GET")


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
def test_config_set_rejects_a_bad_value_with_redis_text(pair: Pair, name: str, value: str) -> None:
    before = _config_value(pair.rill, name)
    reply = pair.check("CONFIG", "SET", name, value)
    assert reply.startswith(b"-ERR CONFIG SET failed"), reply
    assert _config_value(pair.rill, name) == before


@pytest.mark.parametrize(
    "args",
    [
        ("no-such-directive", "1"),
        ("hz", "10", "hz", "11"),
        ("daemonize", "yes"),
        ("dir", "/tmp"),
        ("dbfilename", "x.rdb"),
        ("daemonize", "yes", "no-such-directive", "1"),
        ("daemonize", "yes", "hz", "10", "hz", "12"),
        ("hz", "10", "maxclients"),
        ("hz",),
    ],
    ids=["unknown", "duplicate", "immutable", "protected-dir", "protected-dbfilename",
         "unknown-first", "last-refusal-reported", "odd-arguments", "arity"],
)
def test_config_set_refusals_match_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    pair_any.check("CONFIG", "SET", *args)


def test_config_set_of_several_pairs_is_all_or_nothing(pair: Pair) -> None:
    before = _config_value(pair.rill, "stream-node-max-entries")
    pair.check("CONFIG", "SET", "stream-node-max-entries", "7", "maxclients", "abc")
    pair.check("CONFIG", "GET", "stream-node-max-entries")
    assert _config_value(pair.rill, "stream-node-max-entries") == before


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("stream-node-max-entries", "50"),
        ("stream-node-max-bytes", "8kb"),
        ("stream-node-max-bytes", ""),
        ("notify-keyspace-events", "KEA"),
        ("notify-keyspace-events", "Ex"),
        ("notify-keyspace-events", "An"),
        ("client-output-buffer-limit", "pubsub 1mb 2mb 3"),
        ("client-output-buffer-limit", ""),
        ("maxmemory", "99999999999999999999999"),
        ("hz", "0"),
        ("hz", "100000"),
        ("appendfsync", "ALWAYS"),
        ("replica-priority", "0"),
        ("slave-priority", "42"),
        ("replica-announced", "NO"),
        ("replica-announce-ip", "10.1.2.3"),
        ("slave-announce-ip", "host.example"),
        ("replica-announce-port", "7000"),
    ],
)
def test_config_set_stores_the_value_redis_stores(pair: Pair, name: str, value: str) -> None:
    original = _config_value(pair.oracle, name)
    try:
        pair.check("CONFIG", "SET", name, value)
        pair.check("CONFIG", "GET", name)
    finally:
        _both(pair, "CONFIG", "SET", name, original.decode())
    pair.check("CONFIG", "GET", name)


def test_config_subcommand_errors_and_help_match_redis(pair_any: Pair) -> None:
    pair_any.check("CONFIG")
    pair_any.check("CONFIG", "BOGUS")
    pair_any.check("CONFIG", "HELP")
    pair_any.check("CONFIG", "HELP", "extra")
    pair_any.check("CONFIG", "RESETSTAT")
    pair_any.check("CONFIG", "REWRITE")  # both run without a config file


# -- CLIENT -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a b", "a\nb", "caf\xe9", "x\x7f"])
def test_client_setname_refuses_what_redis_refuses(pair_any: Pair, name: str) -> None:
    pair_any.check("CLIENT", "SETNAME", name)
    pair_any.check("CLIENT", "GETNAME")


def test_client_setname_getname_round_trip(pair_any: Pair) -> None:
    pair_any.check("CLIENT", "GETNAME")
    pair_any.check("CLIENT", "SETNAME", "worker-1")
    pair_any.check("CLIENT", "GETNAME")
    pair_any.check("CLIENT", "SETNAME", "")  # an empty name clears it
    pair_any.check("CLIENT", "GETNAME")
    pair_any.check("CLIENT", "SETNAME")


@pytest.mark.parametrize(
    "args",
    [
        ("LIST", "TYPE", "bogus"), ("LIST", "TYPE", "pubsub"), ("LIST", "TYPE", "master"),
        ("LIST", "TYPE", "normal", "extra"), ("LIST", "ID", "1", "abc"), ("LIST", "ID", "999999"),
        ("LIST", "ID"), ("LIST", "bogus"),
        ("KILL", "1.2.3.4:5"), ("KILL", "ID", "999999"), ("KILL", "ID", "abc"), ("KILL", "ID", "0"),
        ("KILL", "bogus", "x"), ("KILL", "SKIPME", "maybe"), ("KILL", "ADDR", "1.1.1.1:1", "SKIPME", "yes"),
        ("KILL", "TYPE", "master"), ("KILL", "TYPE", "bogus"), ("KILL", "USER", "nobody"),
        ("KILL", "ID", "1", "TYPE"), ("KILL",),
        ("UNBLOCK", "999999"), ("UNBLOCK", "5", "foo"), ("UNBLOCK", "abc"), ("UNBLOCK", "5", "ERROR"),
        ("UNBLOCK", "1", "2", "3"),
        ("PAUSE", "abc"), ("PAUSE", "-1"), ("PAUSE", "100", "bogus"), ("PAUSE", "1", "WRITE", "x"),
        ("NO-EVICT", "maybe"), ("NO-EVICT", "on"), ("NO-EVICT", "off"), ("NO-EVICT",),
        ("REPLY", "maybe"), ("REPLY", "on"),
        ("GETREDIR",), ("CACHING", "yes"), ("CACHING", "no"),
        ("bogus",), ("ID", "extra"),
    ],
)
def test_client_subcommand_replies_match_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    pair_any.check("CLIENT", *args)


def test_client_without_subcommand_is_an_arity_error(pair_any: Pair) -> None:
    pair_any.check("CLIENT")


def _client_fields(line: bytes) -> list[tuple[str, str]]:
    return [tuple(item.split("=", 1)) for item in line.decode().strip().split(" ")]  # type: ignore[misc]


def test_client_info_has_redis_fields_in_order(pair: Pair) -> None:
    pair.check("CLIENT", "SETNAME", "probe")
    expected, actual = pair.both("CLIENT", "INFO")
    theirs, ours = _client_fields(parse(expected).value), _client_fields(parse(actual).value)
    # Redis 7.2 appended lib-name= and lib-ver= to the 7.0 line.
    assert [k for k, _ in ours] == [k for k, _ in theirs] + ["lib-name", "lib-ver"]
    same = {"name", "db", "sub", "psub", "ssub", "multi", "flags", "cmd", "user", "redir", "resp"}
    assert {k: v for k, v in ours if k in same} == {k: v for k, v in theirs if k in same}


def test_client_list_type_normal_lists_the_caller_as_redis_does(pair_any: Pair) -> None:
    expected, actual = pair_any.both("CLIENT", "LIST", "TYPE", "normal")
    assert parse(actual).kind == parse(expected).kind
    ours = re.findall(rb"cmd=(\S+)", parse(actual).value)
    assert b"client|list" in ours


# -- COMMAND ----------------------------------------------------------------------------------


def _names(conn: RawConnection) -> set[bytes]:
    return {item.value for item in parse(conn.call("COMMAND", "LIST")).value}


def _flatten(value: R) -> object:
    """Plain Python values of a reply; a map becomes the flat tuple RESP2 would send."""
    if value.kind == "%":
        return tuple(_flatten(item) for pair in value.value for item in pair)
    if isinstance(value.value, tuple):
        return tuple(_flatten(v) for v in value.value)
    return value.value


# COMMAND INFO's fields: name, arity, flags, first key, last key, step, ACL categories, tips,
# key specs, subcommands.
_INFO_FIELDS = ("name", "arity", "flags", "first", "last", "step", "categories", "tips", "key specs", "subcommands")


def _info_fields(reply: R) -> dict[str, object]:
    values = [_flatten(v) for v in reply.value]
    shown = dict(zip(_INFO_FIELDS, values))
    # Sets are unordered in RESP3 terms but Redis writes them in its own order: compare that.
    return shown


def test_command_info_matches_redis_for_every_shared_command(pair_any: Pair) -> None:
    """Every field of COMMAND INFO (key specs and tips included), command by command and
    subcommand by subcommand. Where Redis 7.0 and 7.2 differ (DIFFERS_IN_ORACLE, from
    their command JSON), the differing fields are Redis 7.2's and are left out here;
    test_command_info_follows_redis_7_2_where_7_0_differs checks them."""
    shared = sorted(_names(pair_any.rill) & _names(pair_any.oracle))
    assert b"config|get" in shared and b"client|kill" in shared and b"xreadgroup" in shared and b"acl|setuser" in shared
    mismatches = []
    for name in shared:
        expected, actual = pair_any.both("COMMAND", "INFO", name)
        theirs, ours = _info_fields(parse(expected).value[0]), _info_fields(parse(actual).value[0])
        differs = DIFFERS_IN_ORACLE.get(name.decode(), "")
        skip = {"subcommands"} | {f for f in ("arity", "flags", "categories", "key specs", "tips") if f in differs}
        for field in _INFO_FIELDS:
            if field not in skip and ours[field] != theirs[field]:
                mismatches.append((name, field, theirs[field], ours[field]))
    assert not mismatches, "\n".join(f"{n!r} {f}:\n  redis: {t}\n  rill:  {o}" for n, f, t, o in mismatches)


def test_command_info_follows_redis_7_2_where_7_0_differs(pair: Pair) -> None:
    def info(name: str) -> dict[str, object]:
        return _info_fields(parse(pair.rill.call("COMMAND", "INFO", name)).value[0])

    assert info("command|getkeys")["arity"] == info("command|getkeysandflags")["arity"] == -3
    assert info("wait")["flags"] == ()
    assert info("client|setname")["tips"] == (b"request_policy:all_nodes", b"response_policy:all_succeeded")
    assert info("scan")["tips"] == (b"nondeterministic_output", b"request_policy:special",
                                    b"response_policy:special")
    assert info("client|no-touch")["categories"] == (b"@slow", b"@connection")


def test_command_info_of_xadd_matches_redis(pair_any: Pair) -> None:
    expected, actual = pair_any.both("COMMAND", "INFO", "xadd", "no-such-command", "CONFIG|GET")
    theirs, ours = parse(expected).value, parse(actual).value
    assert ours[1] == theirs[1]  # a null for the unknown command
    for i in (0, 2):
        assert _flatten(ours[i])[:7] == _flatten(theirs[i])[:7]  # type: ignore[index]
        # key specs: same begin_search/find_keys as Redis (flags may be coarser)
        assert [_spec_shape(s) for s in ours[i].value[8].value] == [_spec_shape(s) for s in theirs[i].value[8].value]


def _spec_shape(spec: R) -> object:
    items = dict(_pairs_any(spec))
    return (_flatten(items[b"begin_search"]), _flatten(items[b"find_keys"]))


def _pairs_any(value: R) -> list[tuple[bytes, R]]:
    if value.kind == "%":
        return [(k.value, v) for k, v in value.value]
    return [(value.value[i].value, value.value[i + 1]) for i in range(0, len(value.value), 2)]


@pytest.mark.parametrize(
    "args",
    [
        ("xadd", "s", "*", "a", "b"), ("xread", "COUNT", "1", "STREAMS", "a", "b", "0", "0"),
        ("xread", "count", "1", "streams", "a", "b", "c"), ("xread", "COUNT", "1", "a", "b", "c"),
        ("xreadgroup", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0"), ("get", "a"),
        ("get", "a", "b"), ("config", "get", "x"), ("bogus", "a"), ("config", "bogus", "x"),
        ("del", "a", "b", "c"), ("mset", "a", "1", "b", "2"),
    ],
)
def test_command_getkeys_matches_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    pair_any.check("COMMAND", "GETKEYS", *args)


def test_command_getkeys_of_a_bare_command_name_answers_as_redis_7_2(pair: Pair) -> None:
    """Redis 7.2's arity for COMMAND GETKEYS is -3 (7.0: -4): a command name alone reaches
    the command's own arity check."""
    assert pair.rill.call("COMMAND", "GETKEYS", "get") == b"-ERR Invalid number of arguments specified for command\r\n"
    assert pair.rill.call("COMMAND", "GETKEYS", "ping") == b"-ERR The command has no key arguments\r\n"
    assert pair.rill.call("COMMAND", "GETKEYSANDFLAGS", "xlen") == (
        b"-ERR Invalid number of arguments specified for command\r\n")


@pytest.mark.parametrize(
    "args",
    [
        ("set", "k", "v"), ("set", "k", "v", "GET"), ("set", "k", "v", "get", "EX", "10"), ("del", "a", "b"),
        ("xreadgroup", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"), ("xread", "STREAMS", "a", "0"),
        ("rename", "a", "b"), ("copy", "a", "b"), ("getdel", "a"), ("xtrim", "s", "MAXLEN", "1"), ("xack", "s", "g", "1"),
        ("mset", "a", "1", "b", "2"), ("expire", "a", "1"), ("watch", "a", "b"), ("spublish", "ch", "m"),
    ],
)
def test_command_getkeysandflags_matches_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    """The key specs' flags, which ACL %R~ / %W~ patterns read."""
    pair_any.check("COMMAND", "GETKEYSANDFLAGS", *args)


def test_command_getkeysandflags_of_xadd_matches_redis(pair_any: Pair) -> None:
    pair_any.check("COMMAND", "GETKEYSANDFLAGS", "xadd", "s", "*", "a", "b")


def test_command_list_filters_match_redis(pair_any: Pair) -> None:
    for args in (("FILTERBY", "bogus", "x"), ("bogus",), ("FILTERBY", "MODULE", "x"), ("FILTERBY", "PATTERN")):
        pair_any.check("COMMAND", "LIST", *args)
    for pattern in ("config*", "CONFIG|*"):
        expected, actual = pair_any.both("COMMAND", "LIST", "FILTERBY", "PATTERN", pattern)
        assert {v.value for v in parse(actual).value} == {v.value for v in parse(expected).value}
    expected, actual = pair_any.both("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|*")
    # CLIENT SETINFO and CLIENT NO-TOUCH are Redis 7.2 additions.
    assert {v.value for v in parse(actual).value} == {v.value for v in parse(expected).value} | {
        b"client|setinfo", b"client|no-touch"
    }


def test_command_acl_category_filter_agrees_on_shared_commands(pair: Pair) -> None:
    shared = _names(pair.rill) & _names(pair.oracle)
    for category in ("stream", "admin", "connection", "fast"):
        expected, actual = pair.both("COMMAND", "LIST", "FILTERBY", "ACLCAT", category)
        theirs = {v.value for v in parse(expected).value} & shared
        ours = {v.value for v in parse(actual).value} & shared
        assert ours == theirs, (category, ours ^ theirs)


def test_command_docs_since_and_group_match_redis(pair_any: Pair) -> None:
    names = ["config", "config|get", "client|setname", "command", "info", "xadd", "get", "debug"]
    expected, actual = pair_any.both("COMMAND", "DOCS", *names)
    theirs = {k: dict(_pairs_any(v)) for k, v in _pairs_any(parse(expected))}
    ours = {k: dict(_pairs_any(v)) for k, v in _pairs_any(parse(actual))}
    assert set(ours) == set(theirs)
    for name in ours:
        for field in (b"since", b"group"):
            assert ours[name][field] == theirs[name][field], (name, field)
        assert (b"subcommands" in ours[name]) == (b"subcommands" in theirs[name])


def test_command_errors_and_help_match_redis(pair_any: Pair) -> None:
    pair_any.check("COMMAND", "BOGUS")
    pair_any.check("COMMAND", "COUNT", "extra")
    pair_any.check("COMMAND", "HELP")
    pair_any.check("COMMAND", "DOCS", "no-such-command")
    pair_any.check("COMMAND", "INFO", "no-such-command")


# -- INFO -------------------------------------------------------------------------------------


def _info(conn: RawConnection, *sections: str) -> dict[str, list[str]]:
    """Section title → field names, from the raw reply (bulk in RESP2, verbatim in RESP3)."""
    reply = parse(conn.call("INFO", *sections))
    text = reply.value.decode()
    if reply.kind == "=":
        assert text.startswith("txt:"), text[:10]
        text = text[4:]
    assert text == "" or text.endswith("\r\n"), text[-10:]
    out: dict[str, list[str]] = {}
    title = ""
    for line in text.split("\r\n"):
        if line.startswith("# "):
            title = line[2:]
            out[title] = []
        elif line:
            out[title].append(line.split(":", 1)[0])
    return out


@pytest.mark.parametrize("args", [(), ("default",), ("all",), ("everything",), ("server", "KEYSPACE"), ("bogus",)])
def test_info_lists_the_same_sections_as_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    assert list(_info(pair_any.rill, *args)) == list(_info(pair_any.oracle, *args))


@pytest.mark.parametrize(
    "section", ["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "cluster"]
)
def test_info_section_has_every_redis_field(pair_any: Pair, section: str) -> None:
    theirs = _info(pair_any.oracle, section)
    ours = _info(pair_any.rill, section)
    assert list(ours) == list(theirs)
    for title, fields in theirs.items():
        missing = [f for f in fields if f not in ours[title]]
        assert not missing, f"# {title} lacks {missing}"
        # Redis's order is kept: fields both have appear in the same relative order.
        assert [f for f in ours[title] if f in fields] == fields


def test_info_of_an_unknown_section_is_empty_like_redis(pair_any: Pair) -> None:
    pair_any.check("INFO", "bogus")
    pair_any.check("INFO", "bogus", "more")


def test_info_errorstats_and_commandstats_count_like_redis(pair: Pair) -> None:
    pair.check("CONFIG", "RESETSTAT")
    pair.check("NO-SUCH-COMMAND")
    pair.check("CONFIG", "SET", "hz", "abc")
    pair.check("PING")
    pair.check("INFO", "errorstats")
    expected, actual = pair.both("INFO", "commandstats")
    line = re.compile(
        rb"cmdstat_([a-z|-]+):calls=(\d+),usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=(\d+),failed_calls=(\d+)\r\n"
    )
    theirs = {m[0]: m[1:] for m in line.findall(parse(expected).value)}
    ours = {m[0]: m[1:] for m in line.findall(parse(actual).value)}
    assert ours == theirs
    assert ours[b"config|set"] == (b"1", b"0", b"1")


def test_info_keyspace_matches_redis(pair_any: Pair) -> None:
    pair_any.check("INFO", "keyspace")
    pair_any.check("XADD", "s", "1-1", "f", "v")
    pair_any.check("SELECT", "3")
    pair_any.check("XADD", "s3", "1-1", "f", "v")
    pair_any.check("INFO", "keyspace")


# -- small server commands ----------------------------------------------------------------------


def test_time_lastsave_and_role_have_redis_shapes(pair_any: Pair) -> None:
    for args in (("TIME",), ("LASTSAVE",), ("ROLE",)):
        expected, actual = pair_any.both(*args)
        theirs, ours = parse(expected), parse(actual)
        assert ours.kind == theirs.kind
        if isinstance(theirs.value, tuple):
            assert [v.kind for v in ours.value] == [v.kind for v in theirs.value]
    ours = parse(pair_any.rill.call("TIME")).value
    assert abs(int(ours[0].value) - time.time()) < 5 and 0 <= int(ours[1].value) < 1_000_000
    assert _flatten(parse(pair_any.rill.call("ROLE")))[0] == b"master"  # type: ignore[index]
    for args in (("TIME", "x"), ("LASTSAVE", "x"), ("ROLE", "x"), ("MONITOR", "x")):
        pair_any.check(*args)


@pytest.mark.parametrize(
    "args",
    [
        ("FUNCTION", "LIST"), ("FUNCTION", "LIST", "WITHCODE"), ("FUNCTION", "LIST", "bogus"),
        ("FUNCTION", "LIST", "LIBRARYNAME"), ("FUNCTION", "LIST", "LIBRARYNAME", "x*", "WITHCODE"),
        ("FUNCTION", "FLUSH"), ("FUNCTION", "FLUSH", "ASYNC"), ("FUNCTION", "FLUSH", "bogus"),
        ("FUNCTION", "bogus"), ("FUNCTION",), ("FUNCTION", "KILL"), ("FUNCTION", "KILL", "x"),
        ("SCRIPT", "KILL"), ("SCRIPT", "KILL", "x"), ("SCRIPT",),
        ("SLOWLOG", "GET", "abc"), ("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "5", "6"),
        ("SLOWLOG", "RESET"), ("SLOWLOG", "bogus"), ("SLOWLOG", "HELP"),
        ("LATENCY", "LATEST"), ("LATENCY", "HISTORY", "command"), ("LATENCY", "HISTORY"),
        ("LATENCY", "GRAPH", "command"), ("LATENCY", "RESET"), ("LATENCY", "DOCTOR"),
        ("LATENCY", "LATEST", "x"), ("LATENCY", "bogus"), ("LATENCY", "HELP"),
        ("MEMORY", "USAGE", "nokey"), ("MEMORY", "USAGE", "k", "SAMPLES", "x"),
        ("MEMORY", "USAGE", "k", "bogus", "1"), ("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
        ("MEMORY", "USAGE"), ("MEMORY", "STATS", "x"), ("MEMORY", "DOCTOR"), ("MEMORY", "PURGE"),
        ("MEMORY", "bogus"), ("MEMORY", "HELP"),
        ("SHUTDOWN", "bogus"), ("SHUTDOWN", "NOSAVE", "SAVE"), ("SHUTDOWN", "ABORT"),
        ("SHUTDOWN", "ABORT", "NOW"), ("SHUTDOWN", "NOW", "bogus"),
    ],
)
def test_admin_command_replies_match_redis(pair_any: Pair, args: tuple[str, ...]) -> None:
    pair_any.check(*args)


def test_memory_usage_of_an_existing_key_is_a_positive_integer(pair_any: Pair) -> None:
    pair_any.check("XADD", "s", "1-1", "field", "value")
    expected, actual = pair_any.both("MEMORY", "USAGE", "s")
    assert parse(expected).kind == parse(actual).kind == ":"
    assert parse(actual).value > 0


# -- MONITOR ----------------------------------------------------------------------------------

_MONITOR_LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) ([0-9.:]+)\] (.*)$")


def _monitor_lines(conn: RawConnection, count: int) -> list[tuple[bytes, bytes]]:
    """The next `count` MONITOR lines as (db, command part), timestamps and addresses checked
    for shape and dropped."""
    out = []
    for _ in range(count):
        line = conn.read_reply().rstrip(b"\r\n")
        m = _MONITOR_LINE.match(line)
        assert m, line
        assert abs(int(m.group(1)) - time.time()) < 60
        out.append((m.group(3), m.group(5)))
    return out


def test_monitor_shows_what_redis_shows(pair: Pair, redis_server: Server, rill_node: Server) -> None:
    watchers = [RawConnection(redis_server.port), RawConnection(rill_node.port)]
    try:
        for conn in watchers:
            assert conn.call("MONITOR") == b"+OK\r\n"
        script: list[tuple[str, ...]] = [
            ("PING",), ("ECHO", 'quote" back\\ nl\n tab\t bell\x07 bs\x08 bin\x01\xff'),
            ("AUTH", "secret"), ("AUTH", "user", "secret"), ("HELLO", "2", "AUTH", "default", "pw"),
            ("CONFIG", "GET", "hz"), ("NO-SUCH-COMMAND",), ("GET",), ("CLIENT", "SETNAME", "mon"),
            ("CLIENT", "LIST"), ("DEBUG", "HELP"), ("SELECT", "3"), ("PING", "in db 3"), ("SELECT", "0"),
            ("MULTI",), ("PING", "queued"), ("EXEC",), ("XADD", "s", "1-1", "f", "v"),
        ]
        for args in script:
            pair.oracle.call(*args)
            pair.rill.call(*args)
        pair.oracle.call("PING", "end")
        pair.rill.call("PING", "end")
        expected = _monitor_lines(watchers[0], 14)
        actual = _monitor_lines(watchers[1], 14)
        assert actual == expected
        assert expected[-1][1] == b'"PING" "end"'
    finally:
        for conn in watchers:
            conn.close()


# -- DEBUG (against an oracle that allows it) -----------------------------------------------------


@pytest.fixture(scope="module")
def debug_redis() -> Iterator[Server]:
    server = start_redis("--enable-debug-command", "yes")
    yield server
    server.stop()


@pytest.fixture
def dpair(debug_redis: Server, rill_node: Server) -> Iterator[Pair]:
    p = Pair(debug_redis.port, rill_node.port, 2)
    p.oracle.call("FLUSHALL")
    p.rill.call("FLUSHALL")
    yield p
    p.close()


def test_debug_digest_matches_redis_for_strings_and_plain_streams(dpair: Pair) -> None:
    dpair.check("DEBUG", "DIGEST")
    dpair.check("SET", "greeting", "hello")
    dpair.check("SET", "n", "12345")
    for i in range(1, 300):
        dpair.check("XADD", "events", f"{i}-{i % 3}", "field", f"value-{i}", "n", str(i))
    dpair.check("XADD", "other", "5-5", "a", "b")
    dpair.check("SELECT", "2")
    dpair.check("SET", "greeting", "hello")
    dpair.check("DEBUG", "DIGEST")
    dpair.check("DEBUG", "DIGEST-VALUE", "greeting", "nokey")
    dpair.check("SELECT", "0")
    dpair.check("DEBUG", "DIGEST-VALUE", "events", "other", "n", "nokey")
    dpair.check("DEBUG", "DIGEST-VALUE")
    dpair.check("DEBUG", "DIGEST")


@pytest.mark.parametrize(
    "args",
    [("bogus",), ("SLEEP",), ("SLEEP", "0"), ("SLEEP", "abc"), ("SET-ACTIVE-EXPIRE", "1"),
     ("SET-ACTIVE-EXPIRE",), ("DIGEST", "extra"), ("ERROR", "MYERR custom text"), ("LOG", "hello")],
)
def test_debug_replies_match_redis(dpair: Pair, args: tuple[str, ...]) -> None:
    dpair.check("DEBUG", *args)


@pytest.mark.parametrize("version", ["+3", " 3", "3_0", "03", "4", "1", "x"])
def test_hello_protocol_version_is_parsed_like_redis(pair: Pair, version: str) -> None:
    pair.check("HELLO", version)
