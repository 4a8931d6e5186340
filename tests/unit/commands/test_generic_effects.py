"""The effects that the generic, string and transaction commands log (DESIGN principle 2),
observed on a real in-process `Server` through its effect-log listener: what each write
logs, that a write which changed nothing logs nothing, that one EXEC is one unit, and that
replaying the log on an empty node rebuilds the same keyspace.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.commands.reply import OK, ReplyError
from node.config import Config
from node.log.encode import encode_command
from node.server.request_parser import RequestParser


class Node:
    """A server with one client session and the list of committed effect units."""

    def __init__(self) -> None:
        node = RillNode(Config())
        self.server = node.server
        self.session = Session(node, 1)
        self.units: list[bytes] = []
        self.server.effects.add_listener(lambda data, offset: self.units.append(data))

    def run(self, *args: bytes | str | int) -> object:
        argv = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        reply = self.server.execute(self.session, argv)
        # The server re-points its connected clients at their database after SWAPDB; this
        # session has no connection, so it follows its database the same way here.
        self.session.select(self.session.db_index)
        return reply

    def logged(self) -> list[list[bytes]]:
        """Every logged command, in order, as argument vectors (units flattened)."""
        parser = RequestParser()
        parser.authenticated = True
        commands, error = parser.feed(b"".join(self.units))
        assert error is None
        return commands


def unit(*commands: list[bytes]) -> bytes:
    return b"".join(encode_command(c) for c in commands)


SELECT0 = [b"SELECT", b"0"]


@pytest.fixture
def node() -> Iterator[Node]:
    yield Node()


def test_each_write_logs_its_deterministic_form(node: Node) -> None:
    steps: list[tuple[tuple[str, ...], list[bytes]]] = [
        (("SET", "k", "v"), [b"SET", b"k", b"v"]),
        (("set", "k", "w", "XX", "GET"), [b"SET", b"k", b"w"]),
        (("SETNX", "n", "1"), [b"SET", b"n", b"1"]),
        (("GETSET", "n", "2"), [b"SET", b"n", b"2"]),
        (("INCRBY", "n", "40"), [b"SET", b"n", b"42"]),
        (("DECR", "n"), [b"SET", b"n", b"41"]),
        (("MSETNX", "a", "1", "b", "2"), [b"MSET", b"a", b"1", b"b", b"2"]),
        (("MSET", "a", "3"), [b"MSET", b"a", b"3"]),
        (("APPEND", "a", "x"), [b"APPEND", b"a", b"x"]),
        (("GETDEL", "a"), [b"DEL", b"a"]),
        (("DEL", "b", "nokey", "b", "n"), [b"DEL", b"b", b"n"]),
        (("UNLINK", "k"), [b"DEL", b"k"]),
        (("SET", "r", "1"), [b"SET", b"r", b"1"]),
        (("RENAMENX", "r", "s"), [b"RENAME", b"r", b"s"]),
        (("RENAME", "s", "t"), [b"RENAME", b"s", b"t"]),
        (("SWAPDB", "0", "0"), [b"SWAPDB", b"0", b"0"]),
        (("FLUSHDB", "ASYNC"), [b"FLUSHDB", b"ASYNC"]),
        (("FLUSHALL",), [b"FLUSHALL"]),
    ]
    for args, effect in steps:
        before = len(node.units)
        reply = node.run(*args)
        assert type(reply) is not ReplyError, (args, reply)
        assert len(node.units) == before + 1, args
        expected = unit(SELECT0, effect) if before == 0 else unit(effect)
        assert node.units[-1] == expected, args


def test_writes_that_change_nothing_log_nothing(node: Node) -> None:
    node.run("SET", "k", "text")
    node.run("SET", "taken", "1")
    node.run("XADD", "s", "1-1", "f", "v")
    before = list(node.units)
    for args in (("DEL", "nokey"), ("UNLINK", "nokey", "other"), ("SET", "k", "x", "NX"),
                 ("SET", "nokey", "x", "XX", "GET"), ("SETNX", "k", "x"), ("MSETNX", "new", "1", "k", "2"),
                 ("GETDEL", "nokey"), ("RENAME", "k", "k"), ("RENAMENX", "k", "taken"), ("RENAME", "nokey", "x"),
                 ("INCR", "k"), ("INCRBY", "taken", "x"), ("APPEND", "s", "x"), ("GETSET", "s", "x"),
                 ("SET", "k", "v", "EX", "0"), ("EXPIRE", "nokey", "10"), ("PERSIST", "k"), ("GETEX", "k"),
                 ("MOVE", "nokey", "1"), ("COPY", "nokey", "x"), ("MSET", "a"), ("FLUSHDB", "bad"), ("SWAPDB", "0", "99"),
                 ("GET", "k"), ("KEYS", "*"), ("SCAN", "0"), ("EXISTS", "k"), ("TOUCH", "k"), ("OBJECT", "ENCODING", "k")):
        node.run(*args)
    assert node.units == before


def test_exec_logs_one_multi_exec_unit(node: Node) -> None:
    node.run("SET", "seed", "1")
    node.run("MULTI")
    node.run("SET", "a", "1")
    node.run("INCR", "a")
    node.run("GET", "a")
    node.run("DEL", "nokey")
    node.run("SELECT", "2")
    node.run("SET", "b", "x")
    before = len(node.units)
    assert node.run("EXEC") == [OK, 2, b"2", 0, OK, OK]
    assert len(node.units) == before + 1
    assert node.units[-1] == unit(
        [b"MULTI"], [b"SET", b"a", b"1"], [b"SET", b"a", b"2"], [b"SELECT", b"2"], [b"SET", b"b", b"x"], [b"EXEC"]
    )


def test_exec_with_one_write_logs_it_unwrapped_and_reads_log_nothing(node: Node) -> None:
    node.run("SET", "seed", "1")
    node.run("MULTI")
    node.run("GET", "seed")
    node.run("SET", "a", "1")
    node.run("EXEC")
    assert node.units[-1] == unit([b"SET", b"a", b"1"])
    before = len(node.units)
    node.run("MULTI")
    node.run("GET", "a")
    node.run("EXISTS", "a")
    node.run("EXEC")
    assert len(node.units) == before


def test_aborted_and_discarded_transactions_log_nothing(node: Node) -> None:
    node.run("SET", "w", "1")
    before = len(node.units)
    node.run("MULTI")
    node.run("SET", "a", "1")
    node.run("DISCARD")
    node.run("MULTI")
    node.run("SET", "a", "1")
    node.run("SET", "b")
    node.run("EXEC")
    node.run("WATCH", "w")
    node.run("SET", "w", "2")
    assert len(node.units) == before + 1
    node.run("MULTI")
    node.run("SET", "a", "1")
    assert node.run("EXEC") is not None
    assert len(node.units) == before + 1


def test_replaying_the_log_rebuilds_the_keyspace(node: Node) -> None:
    # Invariant: applying the effects of any history to an empty node yields the same data.
    rng = random.Random(3)
    keys = [b"k%d" % i for i in range(8)]
    for _ in range(600):
        k, k2 = rng.choice(keys), rng.choice(keys)
        choice = rng.randrange(14)
        if choice == 0:
            node.run("SET", k, rng.choice([b"1", b"x", b"-7"]), *rng.choice([[], [b"NX"], [b"XX"], [b"GET"]]))
        elif choice == 1:
            node.run("INCRBY", k, rng.randint(-5, 5))
        elif choice == 2:
            node.run("APPEND", k, b"z")
        elif choice == 3:
            node.run("DEL", k, k2)
        elif choice == 4:
            node.run("RENAME", k, k2)
        elif choice == 5:
            node.run("RENAMENX", k, k2)
        elif choice == 6:
            node.run("MSETNX", k, b"m", k2, b"n")
        elif choice == 7:
            node.run("GETDEL", k)
        elif choice == 8:
            node.run("SELECT", rng.randrange(3))
        elif choice == 9:
            node.run("SWAPDB", rng.randrange(3), rng.randrange(3))
        elif choice == 10 and rng.random() < 0.1:
            node.run("FLUSHDB")
        elif choice == 11:
            node.run("MULTI")
            node.run("SET", k, b"t")
            node.run("INCR", k2)
            node.run("EXEC")
        elif choice == 12:
            node.run("XADD", k, b"*", b"f", b"v")
        else:
            node.run("GETSET", k, b"g")
    replica = Node()
    for argv in node.logged():
        replica.run(*argv)
    for db_index in range(3):
        original = node.server.keyspace.dbs[db_index]
        copy = replica.server.keyspace.dbs[db_index]
        assert set(original) == set(copy), db_index
        for key, value in original.items():
            if type(value) is bytes:
                assert copy[key] == value
            else:
                assert type(copy[key]) is type(value)
