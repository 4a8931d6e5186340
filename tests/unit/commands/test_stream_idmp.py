"""Idempotent production through the command layer (XADD IDMP/IDMPAUTO, XCFGSET, XIDMPRECORD,
XINFO STREAM's fields, the stream-idmp-* directives), on an in-process node with a fake clock.

There is no Redis 8.6 binary to compare with, so the specification is Redis's own test suite:
the cases of `tests/unit/type/stream.tcl` (8.6) are ported here, named after the Redis test
they come from ("Redis: ..."), with the waits replaced by moving the clock. Rill's own rules
(effects, replay, the replica fast path) follow them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hiredis
import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.engine.idmp import auto_iid
from node.engine.logged_run import logged_xadd_block
from node.engine.stream_value import StreamValue
from node.log.encode import encode_command
from node.log.logged_xadd import append_logged_xadd
from node.server.resp import encode_one

T0 = 1_700_000_000_000


class Node:
    """An in-process node with a fake clock, one client session and its effects as argv lists."""

    def __init__(self, replay: bool = False) -> None:
        self.clock = [T0]
        node = RillNode(Config(), clock=lambda: self.clock[0])
        self.server = node.server
        self.session = Session(node, 1)
        if replay:
            self.session.flags.add("replay")
        self.log: list[list[bytes]] = []
        reader = hiredis.Reader()

        def collect(data: bytes, offset: int) -> None:
            reader.feed(data)
            while (cmd := reader.gets()) is not False:
                self.log.append(cmd)

        self.server.effects.add_listener(collect)

    def raw(self, *argv: bytes | str | int, proto: int = 2) -> Any:
        """The reply decoded from the bytes a client would read (errors as hiredis.ReplyError)."""
        args = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        reply = self.server.execute(self.session, args)
        self.server.after_batch()
        reader = hiredis.Reader()
        reader.feed(encode_one(reply, proto))
        return reader.gets()

    def __call__(self, *argv: bytes | str | int) -> Any:
        reply = self.raw(*argv)
        assert not isinstance(reply, hiredis.ReplyError), f"{argv!r}: {reply}"
        return reply

    def error(self, *argv: bytes | str | int) -> str:
        reply = self.raw(*argv)
        assert isinstance(reply, hiredis.ReplyError), f"{argv!r} answered {reply!r}"
        return str(reply)

    def info(self, key: str = "mystream", *more: str) -> dict[bytes, Any]:
        flat = self("XINFO", "STREAM", key, *more)
        return dict(zip(flat[0::2], flat[1::2]))

    def advance(self, ms: int) -> None:
        self.clock[0] += ms

    def stream(self, key: bytes = b"mystream") -> StreamValue:
        value = self.server.keyspace.dbs[0][key]
        assert isinstance(value, StreamValue)
        value._check()
        return value

    def digest(self) -> bytes:
        return digest_keyspace(self.server.keyspace)

    def replica(self) -> Node:
        """A node that applied this node's effects so far as a replica does (flagged replay),
        with its clock far behind: replicas decide nothing."""
        replica = Node(replay=True)
        replica.clock[0] = 1
        for argv in self.log:
            reply = replica.raw(*argv)
            assert not isinstance(reply, hiredis.ReplyError), f"replaying {argv!r}: {reply}"
        return replica


@pytest.fixture
def r() -> Iterator[Node]:
    yield Node()


def xadd_ok(r: Node, *argv: str | bytes) -> bytes:
    reply = r("XADD", "mystream", *argv)
    assert isinstance(reply, bytes) and reply.count(b"-") == 1, reply
    return reply


# -- Errors ------------------------------------------------------------------------------------

XADD_ERRORS = [
    # Redis: "XADD IDMP with invalid syntax", "XADD IDMPAUTO with invalid syntax"
    (["IDMP", "p1", "*", "f", "v"], "Invalid stream ID specified as stream command argument"),
    (["IDMP", "p1", "iid1", "1-1", "f", "v"], "IDMP/IDMPAUTO can be used only with auto-generated IDs"),
    (["IDMPAUTO", "p1", "1-1", "f", "v"], "IDMP/IDMPAUTO can be used only with auto-generated IDs"),
    (["IDMP", "p1", "iid1", "5-*", "f", "v"], "IDMP/IDMPAUTO can be used only with auto-generated IDs"),
    (["IDMP", "p1", "iid1", "IDMP", "p2", "iid2", "*", "f", "v"], "IDMP/IDMPAUTO specified multiple times"),
    (["IDMPAUTO", "p1", "IDMP", "p2", "iid2", "*", "f", "v"], "IDMP/IDMPAUTO specified multiple times"),
    (["IDMPAUTO", "p1", "IDMPAUTO", "p2", "*", "f", "v"], "IDMP/IDMPAUTO specified multiple times"),
    (["IDMP", "p1", "iid1", "IDMPAUTO", "p2", "*", "f", "v"], "IDMP/IDMPAUTO specified multiple times"),
    (["IDMP", "", "iid1", "*", "f", "v"], "IDMP requires a non-empty producer ID"),
    (["IDMP", "p1", "", "*", "f", "v"], "IDMP requires a non-empty idempotent ID"),
    (["IDMPAUTO", "", "*", "f", "v"], "IDMPAUTO requires a non-empty producer ID"),
    # Too few arguments after the word: it is not the option, so it is parsed as the ID.
    (["MAXLEN", "5", "IDMP", "p1"], "Invalid stream ID specified as stream command argument"),
    (["MAXLEN", "5", "IDMPAUTO"], "Invalid stream ID specified as stream command argument"),
    # Fields still come in pairs.
    (["IDMP", "p1", "i", "*", "f"], "wrong number of arguments for 'xadd' command"),
]


@pytest.mark.parametrize(("argv", "message"), XADD_ERRORS)
def test_xadd_idmp_errors(r: Node, argv: list[str], message: str) -> None:
    assert r.error("XADD", "mystream", *argv) == "ERR " + message
    assert r("EXISTS", "mystream") == 0
    assert r.log == []


XCFGSET_ERRORS = [
    # Redis: "XCFGSET invalid syntax", "... maximum/minimum value validation"
    ([], "ERR At least one parameter (IDMP-DURATION or IDMP-MAXSIZE) is required"),
    (["IDMP-DURATION"], "ERR syntax error"),
    (["IDMP-MAXSIZE"], "ERR syntax error"),
    (["INVALID"], "ERR syntax error"),
    (["INVALID", "5"], "ERR syntax error"),
    (["IDMP-DURATION", "5", "IDMP-MAXSIZE"], "ERR syntax error"),
    *[
        ([option, value], "ERR value is not an integer or out of range")
        for option in ("IDMP-DURATION", "IDMP-MAXSIZE")
        for value in ("A", "AAA", "*", "-", "+", "120-5", "3.14", "000000000", option)
    ],
    (["IDMP-DURATION", "IDMP-DURATION", "IDMP-DURATION"], "ERR value is not an integer or out of range"),
    (["IDMP-DURATION", "INVALID", "IDMP-MAXSIZE"], "ERR value is not an integer or out of range"),
    (["IDMP-MAXSIZE", "INVALID", "IDMP-DURATION"], "ERR value is not an integer or out of range"),
    *[
        (["IDMP-DURATION", value], "ERR IDMP-DURATION must be between 1 and 86400 seconds")
        for value in ("0", "-100", "86401")
    ],
    *[(["IDMP-MAXSIZE", value], "ERR IDMP-MAXSIZE must be between 1 and 10000 entries") for value in ("0", "-50", "10001")],
]


@pytest.mark.parametrize(("argv", "message"), XCFGSET_ERRORS)
def test_xcfgset_errors_change_nothing(r: Node, argv: list[str], message: str) -> None:
    xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value")
    r("XCFGSET", "mystream", "IDMP-DURATION", "86400", "IDMP-MAXSIZE", "10000")
    before = r.info()
    logged = len(r.log)
    assert r.error("XCFGSET", "mystream", *argv) == message
    assert r.info() == before and len(r.log) == logged


def test_xcfgset_on_a_missing_key_or_another_type(r: Node) -> None:
    # Redis: "XCFGSET error on non-existent stream"
    assert r.error("XCFGSET", "mystream", "IDMP-DURATION", "5") == "ERR no such key"
    r("SET", "str", "x")
    assert r.error("XCFGSET", "str", "IDMP-DURATION", "5").startswith("WRONGTYPE")


def test_xidmprecord_errors(r: Node) -> None:
    entry = xadd_ok(r, "*", "f", "v")
    assert r.error("XIDMPRECORD", "missing", "p", "i", entry) == "ERR no such key"
    assert r.error("XIDMPRECORD", "mystream", "", "i", entry) == "ERR IDMP requires a non-empty producer ID"
    assert r.error("XIDMPRECORD", "mystream", "p", "", entry) == "ERR IDMP requires a non-empty idempotent ID"
    assert r.error("XIDMPRECORD", "mystream", "p", "i", "x") == "ERR Invalid stream ID specified as stream command argument"
    assert r.error("XIDMPRECORD", "mystream", "p", "i", "1-1") == "ERR The ID specified in XIDMPRECORD is not an entry of the stream"
    assert r("XIDMPRECORD", "mystream", "p", "i", entry) == b"OK"
    other = xadd_ok(r, "*", "f", "w")
    assert r.error("XIDMPRECORD", "mystream", "p", "i", other) == "ERR The idempotent ID is already recorded for another entry"
    assert r.error("XIDMPRECORD", "mystream", "p", "i") .startswith("ERR wrong number of arguments")
    # Now XADD IDMP p i answers the recorded entry.
    assert r("XADD", "mystream", "IDMP", "p", "i", "*", "x", "y") == entry


def test_config_set_stream_idmp_directives(r: Node) -> None:
    # Redis: "CONFIG SET stream-idmp-duration and stream-idmp-maxsize validation"
    for name, bad in (("stream-idmp-duration", ("86401", "100000", "0", "-1", "-100")),
                      ("stream-idmp-maxsize", ("10001", "50000", "0", "-1", "-100"))):
        for value in bad:
            assert "must be between" in r.error("CONFIG", "SET", name, value)
    for name, value in (("stream-idmp-duration", "86400"), ("stream-idmp-maxsize", "10000"),
                        ("stream-idmp-duration", "1"), ("stream-idmp-maxsize", "1")):
        assert r("CONFIG", "SET", name, value) == b"OK"
        assert r("CONFIG", "GET", name) == [name.encode(), value.encode()]


# -- Adding and deduplicating ------------------------------------------------------------------


def test_any_bytes_are_a_valid_iid(r: Node) -> None:
    # Redis: "XADD IDMP basic addition"
    iids: list[str | bytes] = [
        "1", "A", "B", "-", "+", "*", "^", "$", "#", "@", "?", "\\", "IDMP", "123-456", "9999999999999-9999999999999",
        "hello世界", "héllo", "line1\nline2", "tab\there", 'quote"test', "with spaces", "long" * 100, "x" * 1000,
        "special!@#$%^&*()", "path/to/file", "key:value",
    ]
    for iid in iids:
        xadd_ok(r, "IDMP", "p1", iid, "*", "f", "v")
    assert r("XLEN", "mystream") == 26
    # Redis: "... with binary-safe iid", "... with maximum length iid"
    first = xadd_ok(r, "IDMP", "p1", b"\x00\x01\x02\xff", "*", "field", "value")
    assert r("XADD", "mystream", "IDMP", "p1", b"\x00\x01\x02\xff", "*", "field", "dup") == first
    xadd_ok(r, "IDMP", "p1", "x" * 65536, "*", "field", "value")


def test_duplicate_returns_the_original_id_and_keeps_the_original_fields(r: Node) -> None:
    # Redis: "XADD IDMP duplicate request returns same ID"
    id1 = xadd_ok(r, "IDMP", "p1", "payment-abc", "*", "amount", "100", "currency", "USD")
    r.advance(5)
    assert r("XADD", "mystream", "IDMP", "p1", "payment-abc", "*", "amount", "200", "currency", "EUR") == id1
    assert r("XLEN", "mystream") == 1
    assert r("XRANGE", "mystream", "-", "+") == [[id1, [b"amount", b"100", b"currency", b"USD"]]]


def test_different_iids_add_different_entries(r: Node) -> None:
    # Redis: "XADD IDMP multiple different IIDs create multiple entries"
    ids = [xadd_ok(r, "IDMP", "p1", f"req-{i}", "*", "user", user) for i, user in enumerate(("alice", "bob", "charlie"))]
    assert len(set(ids)) == 3
    assert [e[1][1] for e in r("XRANGE", "mystream", "-", "+")] == [b"alice", b"bob", b"charlie"]


@pytest.mark.parametrize("options", [
    ["MAXLEN", "~", "100"], ["MINID", "~", "1000000000-0"], ["MAXLEN", "~", "1000", "LIMIT", "10"],
])  # fmt: skip
def test_dedup_with_trimming_options(r: Node, options: list[str]) -> None:
    # Redis: "XADD IDMP with MAXLEN/MINID option", "... with combined options"
    id1 = xadd_ok(r, "IDMP", "p1", "req-1", *options, "*", "field1", "value1", "field2", "value2")
    xadd_ok(r, "IDMP", "p1", "req-2", *options, "*", "field", "value2")
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", *options, "*", "field3", "value3") == id1
    assert r("XLEN", "mystream") == 2
    assert r("XRANGE", "mystream", "-", "+")[0][1] == [b"field1", b"value1", b"field2", b"value2"]


def test_nomkstream(r: Node) -> None:
    # Redis: "XADD IDMP with NOMKSTREAM option", "XADD IDMPAUTO with NOMKSTREAM option"
    assert r("XADD", "mystream", "NOMKSTREAM", "IDMP", "p1", "req-1", "*", "field", "value") is None
    assert r("XADD", "mystream", "NOMKSTREAM", "IDMPAUTO", "p1", "*", "field", "value") is None
    assert r("EXISTS", "mystream") == 0 and r.log == []
    xadd_ok(r, "IDMP", "p1", "req-2", "*", "field", "value")
    xadd_ok(r, "NOMKSTREAM", "IDMP", "p1", "req-3", "*", "field", "value")
    xadd_ok(r, "NOMKSTREAM", "IDMPAUTO", "p1", "*", "field", "test")
    assert r("XLEN", "mystream") == 3


def test_option_order_is_free(r: Node) -> None:
    # Redis: "XADD IDMP argument order variations", "XADD IDMPAUTO argument order variations"
    xadd_ok(r, "IDMP", "p1", "req-1", "MAXLEN", "~", "100", "*", "field", "value1")
    xadd_ok(r, "MAXLEN", "~", "100", "IDMP", "p1", "req-2", "*", "field", "value2")
    xadd_ok(r, "NOMKSTREAM", "IDMP", "p1", "req-3", "MAXLEN", "~", "100", "*", "field", "value3")
    xadd_ok(r, "IDMPAUTO", "p1", "MAXLEN", "~", "100", "*", "field", "test2")
    xadd_ok(r, "MAXLEN", "~", "100", "IDMPAUTO", "p1", "*", "field", "test3")
    assert r("XLEN", "mystream") == 5


def test_duplicates_are_detected_inside_multi(r: Node) -> None:
    # Redis: "XADD IDMP pipelined requests", "... multiple producers pipelined requests"
    r("MULTI")
    for args in (("p1", "req-1", "v1"), ("p2", "req-1", "v2"), ("p1", "req-1", "dup"), ("p2", "req-2", "v3"),
                 ("p3", "req-1", "v4")):
        assert r("XADD", "mystream", "IDMP", args[0], args[1], "*", "field", args[2]) == b"QUEUED"
    ids = r("EXEC")
    assert ids[0] == ids[2] and len({ids[0], ids[1], ids[3], ids[4]}) == 4
    assert r("XLEN", "mystream") == 4
    assert r.info()[b"pids-tracked"] == 3
    assert r.replica().digest() == r.digest()


def test_producers_are_isolated(r: Node) -> None:
    # Redis: "XADD IDMP multiple producers have isolated namespaces" and its IDMPAUTO twin
    id1 = xadd_ok(r, "IDMP", "producer1", "req-123", "*", "field", "from-p1")
    id2 = xadd_ok(r, "IDMP", "producer2", "req-123", "*", "field", "from-p2")
    assert id1 != id2
    assert r("XADD", "mystream", "IDMP", "producer1", "req-123", "*", "field", "dup-p1") == id1
    assert r("XADD", "mystream", "IDMP", "producer2", "req-123", "*", "field", "dup-p2") == id2
    a1 = xadd_ok(r, "IDMPAUTO", "producer1", "*", "amount", "100", "currency", "USD")
    a2 = xadd_ok(r, "IDMPAUTO", "producer2", "*", "amount", "100", "currency", "USD")
    assert a1 != a2
    assert r("XADD", "mystream", "IDMPAUTO", "producer1", "*", "amount", "100", "currency", "USD") == a1
    assert r("XLEN", "mystream") == 4
    # Binary, unicode and long producer IDs are producers like any other.
    for pid in (b"\x00\x01\x02", b"\x03\x04\x05", "producer-世界", "a" * 1000):
        xadd_ok(r, "IDMP", pid, "req-1", "*", "field", "v")
    assert r.info()[b"pids-tracked"] == 6


def test_each_producer_has_its_own_maxsize(r: Node) -> None:
    # Redis: "XADD IDMP multiple producers each have their own MAXSIZE limit"
    xadd_ok(r, "IDMP", "p1", "init", "*", "field", "init")
    assert r("XCFGSET", "mystream", "IDMP-MAXSIZE", "3", "IDMP-DURATION", "60") == b"OK"
    ids = {(p, i): xadd_ok(r, "IDMP", p, f"req-{i}", "*", "field", f"{p}-v{i}") for p in ("p1", "p2") for i in (1, 2, 3)}
    for (p, i), entry in ids.items():
        assert r("XADD", "mystream", "IDMP", p, f"req-{i}", "*", "field", "dup") == entry
    assert r.info()[b"pids-tracked"] == 2


def test_maxsize_evicts_first_in_first_out_and_a_duplicate_does_not_refresh(r: Node) -> None:
    # Redis: "XIDMP set evicts entries when MAXSIZE is reached"
    xadd_ok(r, "IDMP", "p1", "init", "*", "field", "init")
    r("XCFGSET", "mystream", "IDMP-MAXSIZE", "3", "IDMP-DURATION", "60")
    id1, id2, id3 = (xadd_ok(r, "IDMP", "p1", f"req-{i}", "*", "field", f"v{i}") for i in (1, 2, 3))
    for iid, entry in (("req-1", id1), ("req-2", id2), ("req-3", id3)):
        assert r("XADD", "mystream", "IDMP", "p1", iid, "*", "field", "dup") == entry
    xadd_ok(r, "IDMP", "p1", "req-4", "*", "field", "v4")
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "new") != id1
    assert r("XADD", "mystream", "IDMP", "p1", "req-3", "*", "field", "dup2") == id3
    assert r("XLEN", "mystream") == 6


def test_maxsize_wraparound_keeps_the_last_eight(r: Node) -> None:
    # Redis: "XCFGSET IDMP-MAXSIZE wraparound keeps last 8 entries"
    xadd_ok(r, "IDMP", "p1", "init", "*", "field", "init")
    r("XCFGSET", "mystream", "IDMP-MAXSIZE", "8", "IDMP-DURATION", "60")
    ids = [xadd_ok(r, "IDMP", "p1", f"req-{i}", "*", "field", f"v{i}") for i in range(1, 101)]
    for i in range(93, 101):
        assert r("XADD", "mystream", "IDMP", "p1", f"req-{i}", "*", "field", "dup") == ids[i - 1]
    for i in range(1, 93):
        assert r("XADD", "mystream", "IDMP", "p1", f"req-{i}", "*", "field", "new") != ids[i - 1]
    assert r("XLEN", "mystream") == 193


def test_iids_expire_after_the_duration(r: Node) -> None:
    # Redis: "XIDMP entries expire after DURATION seconds" (its 2.5 s wait is a clock move here)
    xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value1")
    r("XCFGSET", "mystream", "IDMP-DURATION", "1")
    id1 = xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value1")
    r.advance(999)
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "value2") == id1
    assert (r.info()[b"pids-tracked"], r.info()[b"iids-tracked"]) == (1, 1)
    r.advance(1)
    assert (r.info()[b"pids-tracked"], r.info()[b"iids-tracked"]) == (0, 0)
    r.advance(1500)
    id3 = xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value3")
    assert id3 != id1
    info = r.info()
    assert (info[b"iids-tracked"], info[b"iids-added"], info[b"iids-duplicates"]) == (1, 3, 1)
    assert r.replica().digest() == r.digest()


def test_expiry_counts_from_the_entry_id_when_the_stream_is_ahead_of_the_clock(r: Node) -> None:
    """An auto-generated ID is never below the stream's last ID: after XSETID into the future,
    IDMP entries are stamped (and age) from that later millisecond."""
    r("XADD", "mystream", "*", "f", "v")
    r("XSETID", "mystream", f"{T0 + 10_000}-0")
    r("XCFGSET", "mystream", "IDMP-DURATION", "1")
    entry = xadd_ok(r, "IDMP", "p", "i", "*", "f", "v")
    assert entry == f"{T0 + 10_000}-1".encode()
    r.advance(10_999)
    assert r("XADD", "mystream", "IDMP", "p", "i", "*", "f", "v") == entry
    r.advance(1)
    assert r("XADD", "mystream", "IDMP", "p", "i", "*", "f", "v") != entry


def test_trimming_and_xdel_do_not_touch_the_map(r: Node) -> None:
    id1 = xadd_ok(r, "IDMP", "p1", "a", "*", "f", "v")
    id2 = xadd_ok(r, "IDMP", "p1", "b", "*", "f", "v")
    r("XTRIM", "mystream", "MAXLEN", "0")
    assert r("XLEN", "mystream") == 0
    assert r("XADD", "mystream", "IDMP", "p1", "a", "*", "f", "v") == id1
    r("XDEL", "mystream", id2)
    assert r("XADD", "mystream", "IDMP", "p1", "b", "*", "f", "v") == id2
    assert r("XLEN", "mystream") == 0
    assert r.info()[b"iids-tracked"] == 2


def test_consumer_groups_see_idmp_entries_once(r: Node) -> None:
    # Redis: "XADD IDMPAUTO with consumer groups", "XADD IDMP with consumer groups"
    xadd_ok(r, "*", "initial", "value")
    r("XGROUP", "CREATE", "mystream", "mygroup", "0")
    id1 = xadd_ok(r, "IDMPAUTO", "p1", "*", "event", "login", "user", "alice")
    xadd_ok(r, "IDMPAUTO", "p1", "*", "event", "logout", "user", "bob")
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "event", "login", "user", "alice") == id1
    reply = r("XREADGROUP", "GROUP", "mygroup", "consumer1", "COUNT", "10", "STREAMS", "mystream", ">")
    assert len(reply[0][1]) == 3
    assert r("XACK", "mystream", "mygroup", id1) == 1
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "user", "alice", "event", "login") == id1


def test_idmpauto_fields(r: Node) -> None:
    # Redis: "XADD IDMPAUTO basic deduplication ...", "... regardless of field order",
    # "... field names matter", "... with empty string values", "... with unicode values",
    # "... with long values", "... with many field-value pairs", "... numeric field names"
    id1 = xadd_ok(r, "IDMPAUTO", "p1", "*", "field1", "a", "field2", "b", "field3", "c")
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "field2", "b", "field3", "c", "field1", "a") == id1
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "field3", "c", "field1", "x", "field2", "b") != id1
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "field1", "value") != r(
        "XADD", "mystream", "IDMPAUTO", "p1", "*", "field2", "value")
    empty = xadd_ok(r, "IDMPAUTO", "p1", "*", "field", "")
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "field", "") == empty
    for value in ("hello世界", "x" * 10000, b"\x00\x01\x02\xff"):
        first = xadd_ok(r, "IDMPAUTO", "p1", "*", "data", value)
        assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "data", value) == first
    many = [x for i in range(1, 9) for x in (f"f{i}", f"v{i}")]
    first = xadd_ok(r, "IDMPAUTO", "p1", "*", *many)
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", *many) == first
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", *many[:-1], "different") != first
    numeric = xadd_ok(r, "IDMPAUTO", "p1", "*", "123", "456", "789", "012")
    assert r("XADD", "mystream", "IDMPAUTO", "p1", "*", "123", "456", "789", "012") == numeric


def test_idmp_and_idmpauto_mix_across_producers(r: Node) -> None:
    # Redis: "XADD IDMP multiple producers with mixed IDMP and IDMPAUTO"
    id1 = xadd_ok(r, "IDMP", "p1", "explicit-iid", "*", "field", "v1")
    id2 = xadd_ok(r, "IDMPAUTO", "p2", "*", "field", "v1")
    xadd_ok(r, "IDMP", "p3", "another-iid", "*", "field", "v1")
    xadd_ok(r, "IDMPAUTO", "p4", "*", "field", "v1")
    assert r("XADD", "mystream", "IDMP", "p1", "explicit-iid", "*", "field", "dup") == id1
    assert r("XADD", "mystream", "IDMPAUTO", "p2", "*", "field", "v1") == id2
    assert r.info()[b"pids-tracked"] == 4
    # IDMPAUTO's iid is an iid of its producer like an explicit one.
    assert r("XADD", "mystream", "IDMP", "p2", auto_iid([b"field", b"v1"], 0), "*", "x", "y") == id2


def test_fifty_producers(r: Node) -> None:
    # Redis: "XADD IDMP multiple producers stress test"
    ids = [xadd_ok(r, "IDMP", f"producer-{i}", "request-1", "*", "field", f"value-{i}") for i in range(50)]
    info = r.info()
    assert (info[b"pids-tracked"], info[b"iids-tracked"]) == (50, 50)
    for i in range(50):
        assert r("XADD", "mystream", "IDMP", f"producer-{i}", "request-1", "*", "field", "dup") == ids[i]
    assert r("XLEN", "mystream") == 50


# -- XCFGSET -----------------------------------------------------------------------------------


def test_xcfgset_sets_values_reported_by_xinfo(r: Node) -> None:
    # Redis: "XCFGSET set IDMP-DURATION successfully" ... "XCFGSET multiple configuration changes",
    # "XINFO STREAM returns idmp-duration and idmp-maxsize fields"
    xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value")
    assert (r.info()[b"idmp-duration"], r.info()[b"idmp-maxsize"]) == (100, 100)
    for args, expected in (
        (("IDMP-DURATION", "5"), (5, 100)), (("IDMP-MAXSIZE", "5000"), (5, 5000)),
        (("IDMP-DURATION", "3", "IDMP-MAXSIZE", "10000"), (3, 10000)), (("IDMP-MAXSIZE", "50", "IDMP-DURATION", "300"), (300, 50)),
        (("IDMP-DURATION", "600"), (600, 50)), (("IDMP-MAXSIZE", "100"), (600, 100)),
        (("IDMP-DURATION", "1"), (1, 100)), (("IDMP-DURATION", "2"), (2, 100)), (("IDMP-MAXSIZE", "200"), (2, 200)),
        (("IDMP-DURATION", "7", "IDMP-DURATION", "8"), (8, 200)),  # the last one given wins
    ):
        assert r("XCFGSET", "mystream", *args) == b"OK"
        full = r.info("mystream", "FULL")
        assert (r.info()[b"idmp-duration"], r.info()[b"idmp-maxsize"]) == expected
        assert (full[b"idmp-duration"], full[b"idmp-maxsize"]) == expected


def test_a_changed_value_clears_every_producers_history_but_keeps_entries_and_counters(r: Node) -> None:
    # Redis: "XCFGSET changing IDMP-DURATION/MAXSIZE clears all iids history", "XCFGSET clears all
    # producer histories", "XCFGSET history cleared preserves stream entries", "... then new
    # deduplication works", "XINFO STREAM iids counters after CFGSET clears history"
    id1 = xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value1", "data", "data1")
    xadd_ok(r, "IDMP", "p2", "req-1", "*", "field", "value2")
    xadd_ok(r, "IDMP", "p3", "req-1", "*", "field", "value3")
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "dup") == id1
    r("XCFGSET", "mystream", "IDMP-DURATION", "60")
    info = r.info()
    assert [info[k] for k in (b"pids-tracked", b"iids-tracked", b"iids-added", b"iids-duplicates")] == [0, 0, 3, 1]
    assert r("XRANGE", "mystream", "-", "+")[0] == [id1, [b"field", b"value1", b"data", b"data1"]]
    new1 = xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "new1")
    assert new1 != id1
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "dup1") == new1
    r("XCFGSET", "mystream", "IDMP-MAXSIZE", "5000")
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "new2") != new1
    assert r("XLEN", "mystream") == 5
    assert r.info()[b"iids-added"] == 5


def test_setting_the_same_values_clears_nothing_and_logs_nothing(r: Node) -> None:
    # Redis: "XCFGSET setting same IDMP-DURATION/MAXSIZE does not clear iids history",
    # "XCFGSET repeated same-value calls preserve IDMP history", "... changing value after
    # same-value sets still clears history", "XCFGSET setting same value preserves iids-tracked"
    id1 = xadd_ok(r, "IDMP", "p1", "req-1", "*", "field", "value1")
    xadd_ok(r, "IDMP", "p1", "req-2", "*", "field", "value2")
    xadd_ok(r, "IDMP", "p2", "req-3", "*", "field", "value3")
    logged = len(r.log)
    for args in (("IDMP-DURATION", "100"), ("IDMP-MAXSIZE", "100"), ("IDMP-DURATION", "100", "IDMP-MAXSIZE", "100")):
        assert r("XCFGSET", "mystream", *args) == b"OK"
    assert len(r.log) == logged
    assert (r.info()[b"iids-tracked"], r.info()[b"iids-added"]) == (3, 3)
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "dup") == id1
    r("XCFGSET", "mystream", "IDMP-DURATION", "50")
    assert r("XADD", "mystream", "IDMP", "p1", "req-1", "*", "field", "new") != id1


# -- XINFO STREAM ----------------------------------------------------------------------------


def test_xinfo_stream_places_the_six_fields_after_recorded_first_entry_id(r: Node) -> None:
    xadd_ok(r, "*", "field", "value")
    for proto in (2, 3):
        for more in ((), ("FULL",)):
            reply = r.raw("XINFO", "STREAM", "mystream", *more, proto=proto)
            names = list(reply)[0::2] if proto == 2 else list(reply)
            at = names.index(b"recorded-first-entry-id")
            assert names[at + 1 : at + 7] == [b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked",
                                              b"iids-added", b"iids-duplicates"]
            assert names[at + 7] in (b"groups", b"entries")
    info = r.info()
    assert [info[n] for n in (b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked", b"iids-added",
                              b"iids-duplicates")] == [100, 100, 0, 0, 0, 0]


def test_xinfo_counters(r: Node) -> None:
    # Redis: "XINFO STREAM returns iids-tracked and iids-added fields", "... iids-added is lifetime
    # counter even after eviction", "... iids-duplicates is lifetime counter", "... persists after
    # eviction", "... iids-tracked counts across all producers", "XINFO STREAM returns pids-tracked"
    xadd_ok(r, "IDMP", "p1", "init", "*", "field", "init")
    r("XCFGSET", "mystream", "IDMP-MAXSIZE", "3")
    for iid in ("req-1", "req-1", "req-2", "req-2"):
        r("XADD", "mystream", "IDMP", "p1", iid, "*", "field", "v")
    info = r.info()
    assert [info[k] for k in (b"iids-tracked", b"iids-added", b"iids-duplicates")] == [2, 3, 2]
    for iid in ("req-3", "req-4", "req-3", "req-4"):
        r("XADD", "mystream", "IDMP", "p1", iid, "*", "field", "v")
    info = r.info()
    assert [info[k] for k in (b"iids-tracked", b"iids-added", b"iids-duplicates")] == [3, 5, 4]
    for pid, iid in (("p2", "req-1"), ("p2", "req-2"), ("p3", "req-1"), ("p2", "req-2")):
        r("XADD", "mystream", "IDMP", pid, iid, "*", "field", "v")
    full = r.info("mystream", "FULL")
    assert [full[k] for k in (b"pids-tracked", b"iids-tracked", b"iids-added", b"iids-duplicates")] == [3, 6, 8, 5]


# -- Server settings and new streams -----------------------------------------------------------


def test_a_new_stream_takes_the_servers_settings_and_replicas_follow_them(r: Node) -> None:
    r("CONFIG", "SET", "stream-idmp-duration", "7")
    r("CONFIG", "SET", "stream-idmp-maxsize", "2")
    xadd_ok(r, "*", "f", "v")
    r("XADD", "plain", "MAXLEN", "5", "*", "f", "v")
    r("XGROUP", "CREATE", "grouped", "g", "$", "MKSTREAM")
    r("XADD", "idmp", "IDMP", "p", "a", "MAXLEN", "0", "*", "f", "v")
    for key in ("mystream", "plain", "grouped", "idmp"):
        info = r.info(key)
        assert (info[b"idmp-duration"], info[b"idmp-maxsize"]) == (7, 2), key
    r("CONFIG", "SET", "stream-idmp-duration", "100")
    r("CONFIG", "SET", "stream-idmp-maxsize", "100")
    # A stream keeps the values it was created with.
    assert r.info()[b"idmp-duration"] == 7
    assert r.info("idmp")[b"iids-tracked"] == 1
    # Replicas keep their own defaults: the settings travel in the log.
    replica = r.replica()
    assert replica.digest() == r.digest()
    assert replica.info("idmp")[b"idmp-maxsize"] == 2
    assert [argv[0] for argv in r.log if argv[0] != b"SELECT"].count(b"XCFGSET") == 4
    assert [b"XIDMPRECORD", b"idmp", b"p", b"a"] in [argv[:4] for argv in r.log]
    for key in ("mystream", "idmp"):
        r("DEL", key)
    xadd_ok(r, "*", "f", "v")
    assert r.info()[b"idmp-duration"] == 100


# -- Effects, replay and the replica fast path ---------------------------------------------


def test_the_log_holds_fully_specified_xadds_and_replays_to_the_same_state(r: Node) -> None:
    xadd_ok(r, "IDMPAUTO", "p", "MAXLEN", "~", "10", "*", "a", "1")
    xadd_ok(r, "IDMP", "p", "x", "MINID", "=", "1", "*", "a", "2")
    r("XADD", "mystream", "IDMP", "p", "x", "*", "a", "3")  # a duplicate
    r("XCFGSET", "mystream", "IDMP-MAXSIZE", "5")
    xadd_ok(r, "IDMP", "q", "y", "*", "a", "4")
    xadds = [argv for argv in r.log if argv[0] == b"XADD"]
    assert [argv[:3] for argv in xadds] == [[b"XADD", b"mystream", b"IDMP"]] * 4
    assert xadds[0][5:8] == [b"MAXLEN", b"=", b"1"]
    assert xadds[1][5:8] == [b"MINID", b"=", b"1"]
    assert xadds[2][5] == xadds[1][8]  # the duplicate names the original entry
    assert [b"XCFGSET", b"mystream", b"IDMP-DURATION", b"100", b"IDMP-MAXSIZE", b"5"] in r.log
    replica = r.replica()
    assert replica.digest() == r.digest()
    assert replica.info() == r.info()
    # The digest covers IDMP state: a stream that never saw IDMP keeps Redis's digest.
    before = r.digest()
    r("XADD", "mystream", "IDMP", "q", "y", "*", "a", "5")
    assert r.digest() != before


def test_only_the_log_may_name_the_id_of_an_idmp_xadd(r: Node) -> None:
    replica = Node(replay=True)
    assert replica("XADD", "s", "IDMP", "p", "i", "5-1", "f", "v") == b"5-1"
    assert replica("XADD", "s", "IDMP", "p", "i", "5-1", "f", "other") == b"5-1"  # the duplicate form
    assert replica.info("s")[b"iids-duplicates"] == 1
    assert r.error("XADD", "s", "IDMP", "p", "i", "5-1", "f", "v").endswith("only with auto-generated IDs")


def test_the_replica_fast_path_refuses_an_idmp_xadd(r: Node) -> None:
    """The C block grouper and `append_logged_xadd` take `XADD key ms-seq field value ...`
    only; an IDMP effect must take the ordinary path, which records the iid."""
    xadd_ok(r, "IDMP", "p", "i", "*", "f", "v")
    xadd_ok(r, "IDMP", "p", "j", "MAXLEN", "=", "5", "*", "f", "v", "g", "w")
    effects = [argv for argv in r.log if argv[0] == b"XADD"]
    plain = [b"XADD", b"mystream", b"1-1", b"f", b"v"]
    data = encode_command(plain) + b"".join(encode_command(e) for e in effects) + encode_command(plain)
    end, groups = logged_xadd_block(data, 0)
    if groups:  # the native build: the block stops at the first IDMP effect
        assert end == len(encode_command(plain)) and len(groups) == 1
    for effect in effects:
        assert logged_xadd_block(encode_command(effect), 0)[1] == []
    replica = Node(replay=True)
    for effect in effects:
        assert not append_logged_xadd(replica.session, effect)
    assert replica.server.keyspace.dbs[0] == {}
    for effect in effects:
        replica(*effect)
    assert replica.digest() == r.digest()
