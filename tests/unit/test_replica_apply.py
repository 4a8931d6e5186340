"""A replica applies its primary's XADD effects (`XADD key ms-seq field value ...`) straight to
the stream, without the dispatcher. Everything else, and any XADD that would fail, still goes
through the dispatcher. Both paths must leave the same data, statistics and errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.log.applier import ApplyError
from node.log.encode import encode_command
from node.replication.node_state_machine import NodeStateMachine
from node.server.resp import encode_one


class _Replica:
    """A real server with the state machine a replica link drives."""

    def __init__(self) -> None:
        node = RillNode(Config())
        self.server = node.server
        self.machine = NodeStateMachine(node.replication, "127.0.0.1:6379")
        self.client = Session(node, 0, addr="test")
        self.client.authenticated = True

    def apply(self, *commands: list[bytes]) -> None:
        data = b"".join(encode_command(c) for c in commands)
        self.machine.apply(data, self.server.effects.offset + len(data))

    def call(self, *argv: bytes) -> bytes:
        """The RESP2 reply."""
        return encode_one(self.server.execute(self.client, list(argv)), 2)

    def xadd_stats(self) -> tuple[int, int]:
        st = self.server.dispatcher.stats["xadd"]
        return st.calls, st.failed


@pytest.fixture
def replicas() -> Iterator[tuple[_Replica, _Replica]]:
    yield _Replica(), _Replica()


def _xadds(name: bytes, key: bytes, start: int, n: int) -> list[list[bytes]]:
    # Some entries with the fields of the first one, some with others (two packings).
    return [
        [name, key, b"%d-%d" % (start + i // 3, i % 3), b"f", b"%d" % i, *([b"g", b"x"] if i % 4 == 0 else [])]
        for i in range(n)
    ]


def test_direct_and_dispatched_xadds_leave_the_same_streams_and_statistics(replicas: tuple[_Replica, _Replica]) -> None:
    direct, dispatched = replicas
    for name, replica in ((b"XADD", direct), (b"XAdd", dispatched)):  # XAdd: not a direct spelling
        replica.apply(*_xadds(name, b"s", 1000, 50))
        replica.apply(*_xadds(name.lower() if replica is direct else name, b"t", 1000, 5))
        replica.apply([b"SELECT", b"3"], *_xadds(name, b"s", 2000, 7), [b"SELECT", b"0"])
    assert direct.xadd_stats() == dispatched.xadd_stats() == (62, 0)
    assert direct.server.dispatcher.total_commands == dispatched.server.dispatcher.total_commands == 64
    assert direct.machine.session.last_command == "select"
    assert direct.call(b"DEBUG", b"DIGEST") == dispatched.call(b"DEBUG", b"DIGEST")
    assert direct.call(b"XRANGE", b"s", b"-", b"+") == dispatched.call(b"XRANGE", b"s", b"-", b"+")
    assert direct.call(b"XLEN", b"t") == b":5\r\n"
    assert direct.call(b"SELECT", b"3") == dispatched.call(b"SELECT", b"3")
    assert direct.call(b"XLEN", b"s") == dispatched.call(b"XLEN", b"s") == b":7\r\n"


def test_xadds_of_a_logged_transaction_are_queued_and_run_by_exec(replicas: tuple[_Replica, _Replica]) -> None:
    replica, _ = replicas
    replica.apply([b"XADD", b"s", b"1-1", b"f", b"v"])
    replica.apply([b"MULTI"], *_xadds(b"XADD", b"s", 5, 3), [b"EXEC"])
    assert replica.call(b"XLEN", b"s") == b":4\r\n"
    assert replica.xadd_stats() == (4, 0)


def test_options_and_generated_ids_go_through_the_dispatcher(replicas: tuple[_Replica, _Replica]) -> None:
    replica, _ = replicas
    replica.apply(*_xadds(b"XADD", b"s", 1, 6))
    # The forms a primary logs for XADD with options: the exact trim it made.
    replica.apply([b"XADD", b"s", b"MAXLEN", b"=", b"3", b"9-1", b"f", b"v"])
    assert replica.call(b"XLEN", b"s") == b":3\r\n"
    assert replica.call(b"XRANGE", b"s", b"-", b"+", b"COUNT", b"1").startswith(b"*1\r\n*2\r\n$3\r\n2-1\r\n")
    assert replica.xadd_stats() == (7, 0)


@pytest.mark.parametrize(
    ("setup", "xadd", "error"),
    [
        ([b"XADD", b"s", b"5-5", b"f", b"v"], [b"XADD", b"s", b"5-5", b"f", b"v"], "equal or smaller than the target stream top item"),
        ([b"SET", b"s", b"x"], [b"XADD", b"s", b"1-1", b"f", b"v"], "WRONGTYPE"),
        ([b"PING"], [b"XADD", b"s", b"0-0", b"f", b"v"], "must be greater than 0-0"),
        ([b"PING"], [b"XADD", b"s", b"1-1", b"f"], "wrong number of arguments"),
    ],
)
def test_an_xadd_that_fails_here_fails_the_batch_with_the_dispatchers_error(
    replicas: tuple[_Replica, _Replica], setup: list[bytes], xadd: list[bytes], error: str
) -> None:
    replica, _ = replicas
    replica.apply(setup)
    before = replica.call(b"DEBUG", b"DIGEST")
    with pytest.raises(ApplyError, match=error):
        replica.apply(xadd)
    assert replica.call(b"DEBUG", b"DIGEST") == before
    assert replica.server.dispatcher.stats["xadd"].failed + replica.server.dispatcher.stats["xadd"].rejected == 1


def test_runs_appended_in_c_count_and_touch_as_single_xadds_do(replicas: tuple[_Replica, _Replica]) -> None:
    """XADDs to an existing stream go in runs from the log's bytes (node/engine/_logged_xadd.c):
    the data, INFO's counters and WATCH must not tell the difference."""
    direct, dispatched = replicas
    for name, replica in ((b"XADD", direct), (b"XAdd", dispatched)):
        replica.apply([name, b"s", b"1-1", b"f", b"v"])  # creates the stream: the ordinary way
        replica.call(b"WATCH", b"s")
        dirty = replica.server.writes
        replica.apply(*[[name, b"s", b"2-%d" % i, b"f", b"v%d" % i] for i in range(300)], [b"PING"],
                      *[[name, b"s", b"3-%d" % i, b"f", b"w"] for i in range(10)])
        assert replica.client.watch_dirty
        assert replica.server.writes - dirty == 310
    assert direct.xadd_stats() == dispatched.xadd_stats() == (311, 0)
    assert direct.server.dispatcher.total_commands == dispatched.server.dispatcher.total_commands == 313  # with PING and WATCH
    for probe in ([b"DEBUG", b"DIGEST"], [b"XINFO", b"STREAM", b"s", b"FULL"], [b"XLEN", b"s"]):
        assert direct.call(*probe) == dispatched.call(*probe)


def test_interleaved_streams_are_appended_stream_by_stream_as_the_log_has_them(replicas: tuple[_Replica, _Replica]) -> None:
    """A primary writing to several streams interleaves their XADDs in the log; the replica
    groups a block of them by stream (they commute) and appends each group in C. Streams that
    do not exist yet, node splits, other commands and other spellings in between must leave
    what one dispatched command at a time leaves."""
    direct, dispatched = replicas
    keys = [b"a", b"b", b"c", b"d", b"e"]
    for name, replica in ((b"XADD", direct), (b"XAdd", dispatched)):
        replica.apply([name, b"a", b"1-0", b"f", b"v"])
        replica.call(b"WATCH", b"c")
        dirty = replica.server.writes
        commands: list[list[bytes]] = []
        for i in range(700):
            key = keys[(i * 7 + i // 50) % len(keys)]
            commands.append([name, key, b"%d-%d" % (2 + i // 3, i % 3), b"f", b"%d" % i, *([b"g", b"x"] if i % 97 == 0 else [])])
            if i % 150 == 149:
                commands.append([b"SET", b"plain:%d" % i, b"v"])
            if i == 400:
                commands.append([b"XAdd", b"z", b"1-1", b"f", b"not the log's spelling"])
        replica.apply(*commands)
        assert replica.client.watch_dirty
        assert replica.server.writes - dirty == len(commands)
    assert direct.xadd_stats() == dispatched.xadd_stats()
    assert direct.server.dispatcher.total_commands == dispatched.server.dispatcher.total_commands
    for probe in ([b"DEBUG", b"DIGEST"], *([b"XINFO", b"STREAM", key, b"FULL"] for key in [*keys, b"z"])):
        assert direct.call(*probe) == dispatched.call(*probe)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ([b"NOSUCHCOMMAND", b"x"], "unknown command"),
        ([b"SET", b"k"], "wrong number of arguments"),
        ([b"XGROUP", b"NOSUCH", b"s"], "unknown subcommand"),
    ],
)
def test_a_batch_with_a_command_the_dispatcher_would_refuse_is_refused_with_nothing_applied(
    replicas: tuple[_Replica, _Replica], bad: list[bytes], error: str
) -> None:
    """Every command is checked before any runs: a bad one anywhere refuses the whole batch."""
    replica, _ = replicas
    replica.apply([b"XADD", b"s", b"1-1", b"f", b"v"])
    before, offset = replica.call(b"DEBUG", b"DIGEST"), replica.server.effects.offset
    with pytest.raises(ApplyError, match=error):
        replica.apply(*_xadds(b"XADD", b"s", 5, 20), [b"SET", b"k", b"v"], bad, *_xadds(b"XADD", b"t", 5, 3))
    assert replica.call(b"DEBUG", b"DIGEST") == before
    assert replica.server.effects.offset == offset
    assert replica.machine.session.multi is None


def test_a_command_that_fails_once_applying_began_stops_the_batch_there(replicas: tuple[_Replica, _Replica]) -> None:
    """A valid command can only fail on a replica that diverged: the commands before it stay
    applied (docs/safety.md), nothing after it runs, and the log does not advance."""
    replica, _ = replicas
    replica.apply([b"SET", b"s", b"a string"])
    offset = replica.server.effects.offset
    with pytest.raises(ApplyError, match="WRONGTYPE"):
        replica.apply([b"SET", b"first", b"1"], [b"XADD", b"s", b"1-1", b"f", b"v"], [b"SET", b"after", b"2"])
    assert replica.call(b"GET", b"first") == b"$1\r\n1\r\n"
    assert replica.call(b"EXISTS", b"after") == b":0\r\n"
    assert replica.server.effects.offset == offset
