"""Key expiry in-process, on a real `RillNode` driven by a fake clock: what the expiry
commands and lazy expiry log (absolute deadlines, DELs, units), a replica's view of expired
keys, the time a transaction sees, the active cycle's bounds and statistics, and the first
pass of a primary that starts with keys already past their time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.commands.expiry import expire_all_due
from node.commands.reply import OK, ReplyError
from node.config import Config
from node.engine.digest import digest_keyspace
from node.log.encode import encode_command
from node.server.request_parser import RequestParser
from node.server.resp import encode_one

T0 = 1_700_000_000_000


class Node:
    """A node with a settable clock, one client session and the committed effect units."""

    def __init__(self, role: str = "master") -> None:
        self.now = T0
        self.node = RillNode(Config(), clock=lambda: self.now)
        self.server = self.node.server
        if role == "slave":  # as the replication side makes it one (node/replication/role.py)
            self.node.replication.role.become_replica()
        self.session = Session(self.node, 1)
        self.units: list[bytes] = []
        self.server.effects.add_listener(lambda data, offset: self.units.append(data))

    def run(self, *args: bytes | str | int, session: Session | None = None) -> object:
        argv = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        return self.server.execute(session or self.session, argv)

    def logged(self) -> list[list[bytes]]:
        parser = RequestParser()
        parser.authenticated = True
        commands, error = parser.feed(b"".join(self.units))
        assert error is None
        return [c for c in commands if c[0] != b"SELECT"]

    def clear_log(self) -> None:
        self.units.clear()


def unit(*commands: list[bytes]) -> bytes:
    return b"".join(encode_command(c) for c in commands)


@pytest.fixture
def node() -> Iterator[Node]:
    yield Node()


def test_relative_deadlines_are_logged_absolute(node: Node) -> None:
    node.run("SET", "k", "v")
    node.run("XADD", "s", "1-1", "f", "v")
    node.clear_log()
    at = b"%d" % (T0 + 10_000)
    node.run("EXPIRE", "k", 10, "NX")
    node.run("PEXPIRE", "s", 10_000)
    node.run("EXPIREAT", "k", (T0 + 10_000) // 1000)
    node.run("SET", "a", "1", "EX", 10)
    node.run("SET", "b", "1", "PX", 10_000, "GET")
    node.run("SETEX", "c", 10, "v")
    node.run("PSETEX", "d", 10_000, "v")
    node.run("GETEX", "a", "EX", 10)
    node.run("SET", "a", "2", "KEEPTTL")
    node.run("INCR", "a")
    node.run("GETEX", "a", "PERSIST")
    node.run("PERSIST", "k")
    assert node.logged() == [
        [b"PEXPIREAT", b"k", at], [b"PEXPIREAT", b"s", at], [b"PEXPIREAT", b"k", at],
        [b"SET", b"a", b"1", b"PXAT", at], [b"SET", b"b", b"1", b"PXAT", at], [b"SET", b"c", b"v", b"PXAT", at],
        [b"SET", b"d", b"v", b"PXAT", at], [b"PEXPIREAT", b"a", at], [b"SET", b"a", b"2", b"PXAT", at],
        [b"SET", b"a", b"3", b"PXAT", at],
        [b"PERSIST", b"a"], [b"PERSIST", b"k"],
    ]


def test_a_deadline_already_past_deletes_and_logs_del(node: Node) -> None:
    for key in ("a", "b", "c"):
        node.run("SET", key, "v")
    node.clear_log()
    assert node.run("EXPIRE", "a", -1) == 1
    assert node.run("PEXPIREAT", "b", T0) == 1  # at the command's time: already expired
    assert node.run("GETEX", "c", "PXAT", T0 - 5) == b"v"
    assert node.run("DBSIZE") == 0
    assert node.logged() == [[b"DEL", b"a"], [b"DEL", b"b"], [b"DEL", b"c"]]


def test_lazy_expiry_logs_del_in_the_unit_of_the_write_that_found_the_key(node: Node) -> None:
    node.run("SET", "r", "v", "PX", 100)
    node.run("SET", "w", "v", "PX", 100)
    node.run("SET", "m1", "v", "PX", 100)
    node.run("SET", "m2", "v", "PX", 100)
    node.clear_log()
    node.now += 101
    assert node.run("GET", "r") is None
    assert node.run("SET", "w", "new") is OK
    assert node.run("MGET", "m1", "m2") == [None, None]
    assert node.units == [
        unit([b"DEL", b"r"]),
        unit([b"MULTI"], [b"DEL", b"w"], [b"SET", b"w", b"new"], [b"EXEC"]),
        unit([b"DEL", b"m1"]),
        unit([b"DEL", b"m2"]),
    ]
    assert node.server.expiry.expired_keys == 4 - 0 - 0  # r, w, m1, m2


def test_a_key_is_there_until_the_time_is_past_its_deadline(node: Node) -> None:
    node.run("SET", "k", "v", "PX", 100)
    node.now += 100
    assert node.run("GET", "k") == b"v"
    assert node.run("PTTL", "k") == 0
    node.now += 1
    assert node.run("GET", "k") is None
    assert node.run("TTL", "k") == -2


def test_exec_sees_the_time_it_started(node: Node) -> None:
    node.run("SET", "k", "v", "PX", 10)
    ticking = node.node.server
    start = node.now

    def clock() -> int:
        node.now += 3  # every read of the clock is 3 ms later
        return node.now

    node.node.clock = clock
    node.session._clock = clock
    ticking.clock = clock
    node.now = start
    node.run("MULTI")
    for _ in range(5):
        node.run("GET", "k")
    # EXEC reads the clock once (start + 3); read per command, the clock would pass the
    # deadline (start + 10) at the third GET.
    assert node.run("EXEC") == [b"v"] * 5
    node.now = start + 20
    assert node.run("GET", "k") is None


def test_a_replica_hides_expired_keys_and_waits_for_its_primarys_del() -> None:
    replica = Node(role="slave")
    link = Session(replica.node, 2)
    link.flags.update(("replay", "master"))
    replica.run("SET", "k", "v", "PXAT", T0 + 100, session=link)
    replica.run("XADD", "s", "1-1", "f", "v", session=link)
    replica.run("PEXPIREAT", "s", T0 + 100, session=link)
    replica.run("SET", "live", "v", session=link)
    assert replica.run("GET", "k") == b"v"
    replica.now += 101
    for args, reply in ((("GET", "k"), b"$-1\r\n"), (("EXISTS", "k", "s", "live"), b":1\r\n"),
                        (("TTL", "k"), b":-2\r\n"), (("XLEN", "s"), b":0\r\n"), (("TYPE", "s"), b"+none\r\n"),
                        (("KEYS", "*"), b"*1\r\n$4\r\nlive\r\n"), (("DBSIZE",), b":3\r\n"),
                        (("SCAN", "0"), b"*2\r\n$1\r\n0\r\n*1\r\n$4\r\nlive\r\n"),
                        (("RANDOMKEY",), b"$4\r\nlive\r\n"), (("OBJECT", "ENCODING", "k"), b"$-1\r\n")):
        assert encode_one(replica.run(*args), 2) == reply, args
    # Nothing was deleted and nothing logged; the link's session sees the keys as they are.
    assert replica.server.expiry.expired_keys == 0
    assert replica.run("GET", "k", session=link) == b"v"
    assert replica.run("XLEN", "s", session=link) == 1
    replica.run("DEL", "k", session=link)  # the primary's DEL
    assert replica.run("DBSIZE") == 2


def test_active_cycle_deletes_due_keys_each_in_its_own_unit(node: Node) -> None:
    for i in range(5):
        node.run("SET", f"k{i}", "v", "PX", 10 + i)
    node.run("SET", "later", "v", "PX", 1000)
    node.run("SELECT", 3)
    node.run("XADD", "s", "1-1", "f", "v")
    node.run("PEXPIRE", "s", 10)
    node.clear_log()
    node.now += 20
    assert node.server.expiry.cycle(node.node, node.now) == 6
    assert node.units[0] == unit([b"SELECT", b"0"], [b"DEL", b"k0"])
    assert node.units[1:5] == [unit([b"DEL", b"k%d" % i]) for i in range(1, 5)]
    assert node.units[5] == unit([b"SELECT", b"3"], [b"DEL", b"s"])
    assert node.server.keyspace.key_count() == 1
    assert node.server.expiry.expired_keys == 6


def test_active_cycle_stops_at_its_time_budget_and_resumes(node: Node) -> None:
    for i in range(1000):
        node.run("SET", f"k{i}", "v", "PX", 1)
    node.now += 10
    elapsed = [0]

    def perf_ns() -> int:
        elapsed[0] += 5_000_000  # each reading 5 ms later: the 25 ms budget lasts a few batches
        return elapsed[0]

    expiry = node.server.expiry
    first = expiry.cycle(node.node, node.now, perf_ns)
    assert 0 < first < 1000
    assert expiry.time_cap_reached == 1
    assert expiry.stale_perc > 0
    total = first
    while total < 1000:
        total += expiry.cycle(node.node, node.now, perf_ns)
    assert node.server.keyspace.key_count() == 0
    assert expiry.expired_keys == 1000


def test_active_expire_effort_raises_the_batch_and_the_budget(node: Node) -> None:
    node.run("CONFIG", "SET", "active-expire-effort", "10")
    assert isinstance(node.run("CONFIG", "SET", "active-expire-effort", "11"), ReplyError)
    for i in range(1000):
        node.run("SET", f"k{i}", "v", "PX", 1)
    node.now += 10
    elapsed = [0]

    def perf_ns() -> int:
        elapsed[0] += 5_000_000
        return elapsed[0]

    # 65 keys per batch and 43 ms instead of 20 keys and 25 ms.
    assert node.server.expiry.cycle(node.node, node.now, perf_ns) >= 8 * 65


def test_a_primary_deletes_what_expired_while_it_was_down(node: Node) -> None:
    link = Session(node.node, 2)
    link.flags.add("replay")  # an AOF being loaded stores deadlines as they are
    node.run("SET", "old", "v", "PXAT", T0 - 10, session=link)
    node.run("PEXPIREAT", "old2", T0 - 10, session=link)  # no such key: nothing
    node.run("XADD", "s", "1-1", "f", "v", session=link)
    node.run("PEXPIREAT", "s", T0 - 5, session=link)
    node.run("SET", "new", "v", "PXAT", T0 + 10, session=link)
    node.clear_log()
    assert expire_all_due(node.node, node.now) == 2
    assert node.logged() == [[b"DEL", b"old"], [b"DEL", b"s"]]
    assert list(node.server.keyspace.dbs[0]) == [b"new"]


def test_replaying_the_effects_rebuilds_the_same_keyspace_and_deadlines(node: Node) -> None:
    node.run("SET", "a", "1", "EX", 100)
    node.run("SET", "b", "1")
    node.run("EXPIRE", "b", 50, "NX")
    node.run("INCR", "a")
    node.run("XADD", "s", "1-1", "f", "v")
    node.run("PEXPIRE", "s", 30_000)
    node.run("RENAME", "s", "t")
    node.run("COPY", "t", "u", "DB", "2")
    node.run("MOVE", "b", "1")
    node.run("SET", "c", "1", "PX", 10)
    node.now += 11
    node.run("GET", "c")
    node.run("GETEX", "a", "PERSIST")
    replica = Node(role="slave")
    replica.now = node.now + 60_000  # a replica's clock far ahead changes nothing it applies
    link = Session(replica.node, 2)
    link.flags.update(("replay", "master"))
    parser = RequestParser()
    parser.authenticated = True
    commands, error = parser.feed(b"".join(node.units))
    assert error is None
    for argv in commands:
        assert not isinstance(replica.server.execute(link, argv), ReplyError), argv
    assert digest_keyspace(replica.server.keyspace) == digest_keyspace(node.server.keyspace)
    for ours, theirs in zip(node.server.keyspace.expires, replica.server.keyspace.expires):
        assert ours.deadlines == theirs.deadlines


def test_a_read_that_deletes_an_expired_key_moves_the_clients_wait_offset(node: Node) -> None:
    node.run("SET", "k", "v", "PX", 10)
    other = Session(node.node, 3)
    node.run("GET", "k", session=other)
    assert other.woff == 0  # a plain read wrote nothing: WAIT would not wait for it
    node.now += 11
    assert node.run("GET", "k", session=other) is None
    # The DEL it logged is this client's write: WAIT waits for replicas to have it (c->woff).
    assert other.woff == node.server.effects.offset > 0
