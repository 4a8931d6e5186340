"""Property test: random histories of writes that set, keep, move and drop times to live, on
strings and streams, with the clock moving forward, lazy expiry and active expiry cycles,
run in-process against a reference model and against a replica replaying their effects.

Each step runs one command on a primary `RillNode` (not started; time from a fake clock)
and checks its reply against a plain model: key -> (type, value, deadline), where a key
whose deadline is past the clock does not exist. After every step:

1. every database's deadline table passes its `_check()`;
2. a replica that applied, in order and as its primary's log, every effect so far has the
   same DEBUG DIGEST and exactly the same deadlines as the primary, whatever its own clock
   says (it runs a minute ahead: applying the log never expires anything);
3. clients of that replica (its clock as the primary's now) see exactly the model's keys:
   EXISTS, TTL and TYPE on the replica, which deletes nothing itself, agree with the model.

At the end of each history all effects are replayed at once on a fresh replica and compared
the same way. The histories are seeded (derandomized) and bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import hiredis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.server.resp import encode_one

KEYS = [b"a", b"b", b"c"]
DBS = 2
T0 = 1_700_000_000_000
REPLICA_AHEAD_MS = 60_000
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


@dataclass
class MKey:
    kind: str  # "string" or "stream"
    value: Any  # bytes for a string, the number of entries for a stream
    deadline: int | None = None


class Node:
    """A RillNode driven in-process; `offset` shifts its clock from the shared one."""

    def __init__(self, clock: list[int], offset: int = 0, role: str = "master") -> None:
        config = Config()
        config.set("databases", str(DBS), startup=True)
        self.node = RillNode(config, clock=lambda: clock[0] + offset)
        self.server = self.node.server
        if role == "slave":  # as the replication side makes it one (node/replication/role.py)
            self.node.replication.role.become_replica()
        self.session = Session(self.node, 1)
        self.effects: list[bytes] = []
        self.server.effects.add_listener(lambda data, end: self.effects.append(data))

    def run(self, *argv: bytes, session: Session | None = None) -> Any:
        session = session or self.session
        reply = self.server.execute(session, list(argv))
        # After SWAPDB the server re-points only its connected clients at their database
        # (and the log applier its session): these sessions have no connection.
        session.select(session.db_index)
        self.server.after_batch()
        reader = hiredis.Reader()
        reader.feed(encode_one(reply, 2))
        return reader.gets()

    def digest(self) -> bytes:
        return digest_keyspace(self.server.keyspace)

    def deadlines(self) -> list[dict[bytes, int]]:
        return [dict(e.deadlines) for e in self.server.keyspace.expires]


class Replica(Node):
    """A read-only replica: a link session applies the primary's effects; `session` reads
    as a client does."""

    def __init__(self, clock: list[int], offset: int) -> None:
        super().__init__(clock, offset, role="slave")
        self.link = Session(self.node, 2)
        self.link.flags.update(("replay", "master"))

    def apply(self, chunks: list[bytes]) -> None:
        reader = hiredis.Reader()
        for chunk in chunks:
            reader.feed(chunk)
        while (argv := reader.gets()) is not False:
            reply = self.run(*argv, session=self.link)
            assert not isinstance(reply, hiredis.ReplyError), (argv, reply)


def err(reply: Any, text: str) -> bool:
    return isinstance(reply, hiredis.ReplyError) and str(reply) == text


keys = st.sampled_from(KEYS)
amounts = st.sampled_from([1, 2, 50, 1000, 2500])


class ExpiryHistory(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.clock = [T0]
        self.node = Node(self.clock)
        self.replica = Replica(self.clock, 0)
        self.ahead = Replica(self.clock, REPLICA_AHEAD_MS)
        self.applied = 0
        self.model: dict[tuple[int, bytes], MKey] = {}
        self.next_id = 1

    # -- the model ------------------------------------------------------------------------

    def now(self) -> int:
        return self.clock[0]

    def get(self, key: bytes, db: int = 0) -> MKey | None:
        """The key as commands see it: absent once its time is past."""
        m = self.model.get((db, key))
        if m is not None and m.deadline is not None and self.now() > m.deadline:
            del self.model[(db, key)]
            return None
        return m

    def run(self, *args: bytes | str | int) -> Any:
        return self.node.run(*[a if isinstance(a, bytes) else str(a).encode() for a in args])

    # -- writes ---------------------------------------------------------------------------

    @rule(key=keys, value=st.sampled_from([b"1", b"7", b"x"]))
    def set_plain(self, key: bytes, value: bytes) -> None:
        assert self.run(b"SET", key, value) == b"OK"
        self.model[(0, key)] = MKey("string", value)

    @rule(key=keys, option=st.sampled_from(["EX", "PX", "EXAT", "PXAT", "KEEPTTL"]), amount=amounts,
          condition=st.sampled_from([None, "NX", "XX"]), get=st.booleans())
    def set_with_options(self, key: bytes, option: str, amount: int, condition: str | None, get: bool) -> None:
        args: list[bytes | str | int] = [b"SET", key, b"5", option]
        now = self.now()
        when = {"EX": now + amount * 1000, "PX": now + amount, "EXAT": (now // 1000 + amount) * 1000,
                "PXAT": now + amount, "KEEPTTL": None}[option]
        if option == "EXAT":
            args.append(now // 1000 + amount)
        elif option == "PXAT":
            args.append(now + amount)
        elif option != "KEEPTTL":
            args.append(amount)
        if condition:
            args.append(condition)
        if get:
            args.append("GET")
        reply = self.run(*args)
        m = self.get(key)
        if get and m is not None and m.kind == "stream":
            assert err(reply, WRONGTYPE), reply
            return
        old = m.value if get and m is not None else None
        if condition == "NX" and m is not None or condition == "XX" and m is None:
            assert reply == old, reply
            return
        assert reply == (old if get else b"OK"), reply
        deadline = (m.deadline if m is not None else None) if option == "KEEPTTL" else when
        self.model[(0, key)] = MKey("string", b"5", deadline)

    @rule(key=keys, command=st.sampled_from(["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"]),
          amount=st.sampled_from([-1, 0, 1, 3, 1000, 2500]), flag=st.sampled_from([None, "NX", "XX", "GT", "LT"]))
    def expire(self, key: bytes, command: str, amount: int, flag: str | None) -> None:
        now = self.now()
        when = {"EXPIRE": now + amount * 1000, "PEXPIRE": now + amount,
                "EXPIREAT": (now // 1000 + amount) * 1000, "PEXPIREAT": now + amount}[command]
        arg = now // 1000 + amount if command == "EXPIREAT" else now + amount if command == "PEXPIREAT" else amount
        reply = self.run(command, key, arg, *([flag] if flag else []))
        m = self.get(key)
        ok = m is not None
        if ok and m is not None and flag:
            current = m.deadline
            ok = not (flag == "NX" and current is not None or flag == "XX" and current is None
                      or flag == "GT" and (current is None or when <= current)
                      or flag == "LT" and current is not None and when >= current)
        assert reply == int(ok), (reply, m, when)
        if ok and m is not None:
            if when <= now:
                del self.model[(0, key)]
            else:
                m.deadline = when

    @rule(key=keys)
    def persist(self, key: bytes) -> None:
        m = self.get(key)
        expected = int(m is not None and m.deadline is not None)
        assert self.run(b"PERSIST", key) == expected
        if m is not None:
            m.deadline = None

    @rule(key=keys, option=st.sampled_from([None, "EX", "PXAT", "EXAT-PAST", "PERSIST"]), amount=amounts)
    def getex(self, key: bytes, option: str | None, amount: int) -> None:
        now = self.now()
        args: list[bytes | str | int] = [b"GETEX", key]
        if option == "EX":
            args += ["EX", amount]
        elif option == "PXAT":
            args += ["PXAT", now + amount]
        elif option == "EXAT-PAST":
            args += ["EXAT", 1]
        elif option == "PERSIST":
            args.append("PERSIST")
        reply = self.run(*args)
        m = self.get(key)
        if m is None:
            assert reply is None
            return
        if m.kind == "stream":
            assert err(reply, WRONGTYPE), reply
            return
        assert reply == m.value
        if option == "EX":
            m.deadline = now + amount * 1000
        elif option == "PXAT":
            m.deadline = now + amount
        elif option == "EXAT-PAST":
            del self.model[(0, key)]
        elif option == "PERSIST":
            m.deadline = None

    @rule(key=keys)
    def incr(self, key: bytes) -> None:
        reply = self.run(b"INCR", key)
        m = self.get(key)
        if m is None:
            assert reply == 1
            self.model[(0, key)] = MKey("string", b"1")
        elif m.kind == "stream":
            assert err(reply, WRONGTYPE)
        elif not m.value.isdigit():
            assert err(reply, "ERR value is not an integer or out of range")
        else:
            m.value = b"%d" % (int(m.value) + 1)
            assert reply == int(m.value)

    @rule(key=keys)
    def xadd(self, key: bytes) -> None:
        entry = b"%d-1" % self.next_id
        self.next_id += 1
        reply = self.run(b"XADD", key, entry, b"f", b"v")
        m = self.get(key)
        if m is None:
            self.model[(0, key)] = MKey("stream", 1)
        elif m.kind == "string":
            assert err(reply, WRONGTYPE)
            return
        else:
            m.value += 1
        assert reply == entry

    @rule(key=keys)
    def delete(self, key: bytes) -> None:
        m = self.get(key)
        assert self.run(b"DEL", key) == int(m is not None)
        self.model.pop((0, key), None)

    @rule(src=keys, dst=keys)
    def rename(self, src: bytes, dst: bytes) -> None:
        reply = self.run(b"RENAME", src, dst)
        m = self.get(src)
        self.get(dst)
        if m is None:
            assert err(reply, "ERR no such key")
            return
        assert reply == b"OK"
        del self.model[(0, src)]
        self.model[(0, dst)] = m

    @rule(key=keys)
    def move(self, key: bytes) -> None:
        reply = self.run(b"MOVE", key, b"1")
        m = self.get(key)
        if m is None or self.get(key, 1) is not None:
            assert reply == 0
            return
        assert reply == 1
        self.model[(1, key)] = self.model.pop((0, key))

    @rule(src=keys, dst=keys, other_db=st.booleans(), replace=st.booleans())
    def copy(self, src: bytes, dst: bytes, other_db: bool, replace: bool) -> None:
        db = 1 if other_db else 0
        args: list[bytes | str | int] = [b"COPY", src, dst, "DB", db] + (["REPLACE"] if replace else [])
        reply = self.run(*args)
        if db == 0 and src == dst:
            assert err(reply, "ERR source and destination objects are the same")
            return
        m = self.get(src)
        if m is None or self.get(dst, db) is not None and not replace:
            assert reply == 0
            return
        assert reply == 1
        self.model[(db, dst)] = MKey(m.kind, m.value, m.deadline)

    @rule()
    def swapdb(self) -> None:
        assert self.run(b"SWAPDB", b"0", b"1") == b"OK"
        self.model = {(1 - db, key): m for (db, key), m in self.model.items()}

    @rule(ms=st.sampled_from([0, 1, 2, 40, 999, 1000, 1001, 3000]))
    def tick(self, ms: int) -> None:
        self.clock[0] += ms

    @rule()
    def active_cycle(self) -> None:
        self.node.server.expiry.cycle(self.node.node, self.now())
        self.node.server.after_batch()

    # -- reads ----------------------------------------------------------------------------

    @rule(key=keys)
    def reads(self, key: bytes) -> None:
        m = self.get(key)
        assert self.run(b"EXISTS", key) == int(m is not None)
        assert self.run(b"TYPE", key) == (m.kind.encode() if m else b"none")
        ttl = -2 if m is None else -1 if m.deadline is None else (m.deadline - self.now() + 500) // 1000
        assert self.run(b"TTL", key) == ttl
        if m is not None and m.kind == "string":
            assert self.run(b"GET", key) == m.value
        elif m is not None:
            assert self.run(b"XLEN", key) == m.value

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def deadline_tables_are_consistent(self) -> None:
        for expires in self.node.server.keyspace.expires:
            expires._check()

    @invariant()
    def replicas_applying_the_effects_match(self) -> None:
        new = self.node.effects[self.applied:]
        self.applied = len(self.node.effects)
        for replica in (self.replica, self.ahead):
            replica.apply(new)
            assert replica.digest() == self.node.digest()
            assert replica.deadlines() == self.node.deadlines()
        self.replica_clients_see_the_model()

    def replica_clients_see_the_model(self) -> None:
        replica = self.replica
        for db in range(DBS):
            replica.run(b"SELECT", str(db).encode())
            for key in KEYS:
                m = self.get(key, db)
                assert replica.run(b"EXISTS", key) == int(m is not None), (db, key, m)
                assert replica.run(b"TYPE", key) == (m.kind.encode() if m else b"none")
                if m is not None and m.deadline is not None:
                    assert replica.run(b"PTTL", key) == m.deadline - self.now()
        replica.run(b"SELECT", b"0")
        assert replica.server.expiry.expired_keys == 0  # a replica never expires on its own

    def teardown(self) -> None:
        if not hasattr(self, "node"):
            return
        fresh = Replica(self.clock, 2 * REPLICA_AHEAD_MS)
        fresh.apply(self.node.effects)
        assert fresh.digest() == self.node.digest()
        assert fresh.deadlines() == self.node.deadlines()


ExpiryHistory.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestExpiryHistory = ExpiryHistory.TestCase
