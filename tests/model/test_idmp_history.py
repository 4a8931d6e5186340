"""Property test: random histories of idempotent production (XADD IDMP / IDMPAUTO with and
without trimming, duplicates, XCFGSET, XIDMPRECORD, XDEL, XTRIM, DEL, the stream-idmp-*
directives, the clock moving by up to a few IDMP-DURATIONs), run in-process through the real
command layer, against a reference model and against replays of their own effects.

The model keeps, per stream and producer, the list of (iid, entry ID) in insertion order cut
to IDMP-MAXSIZE, and treats an iid as remembered while `now - its entry's ms < duration`.
Invariants, after every step:

1. each reply agrees with the model: a remembered (pid, iid) answers its original ID and adds
   nothing, anything else adds an entry; XINFO STREAM's six IDMP fields are the model's;
2. every stream passes `_check()` (the IDMP state's FIFO order invariants included);
3. a replica that applied every effect so far, flagged as a log replay and with a clock far
   behind, has the same DEBUG DIGEST (which covers the IDMP state: settings, counters and each
   producer's iids with their entry IDs, in order).

At the end of each history, all effects replayed at once on a fresh node, and the snapshot
of the primary loaded into a fresh keyspace, both reproduce its digest. Seeded and bounded.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import hiredis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.engine.keyspace import Keyspace
from node.engine.stream_value import StreamValue
from node.persistence.snapshot import SnapshotMeta, load_snapshot, write_snapshot
from node.server.resp import encode_one

KEYS = [b"s1", b"s2"]
PIDS = [b"p1", b"p2", b"p3"]
IIDS = [b"a", b"b", b"c", b"d"]
VALUES = [b"x", b"y"]
T0 = 1_700_000_000_000


def parse_id(raw: bytes) -> int:
    ms, seq = raw.split(b"-")
    return (int(ms) << 64) | int(seq)


class Node:
    """A node driven in-process with a fake clock; collects its effects as RESP bytes."""

    def __init__(self, clock: list[int], lag: int = 0, replay: bool = False) -> None:
        node = RillNode(Config(), clock=lambda: clock[0] - lag)
        self.server = node.server
        self.session = Session(node, 1)
        if replay:
            self.session.flags.add("replay")
        self.effects: list[bytes] = []
        self.server.effects.add_listener(lambda data, offset: self.effects.append(data))

    def run(self, *argv: bytes) -> Any:
        reply = self.server.execute(self.session, list(argv))
        self.server.after_batch()
        reader = hiredis.Reader()
        reader.feed(encode_one(reply, 2))
        return reader.gets()

    def apply(self, chunks: list[bytes]) -> None:
        reader = hiredis.Reader()
        for chunk in chunks:
            reader.feed(chunk)
        while (argv := reader.gets()) is not False:
            reply = self.run(*argv)
            assert not isinstance(reply, hiredis.ReplyError), f"replaying {argv!r}: {reply}"

    def digest(self) -> bytes:
        return digest_keyspace(self.server.keyspace)


@dataclass
class MStream:
    duration: int
    maxsize: int
    producers: dict[bytes, list[tuple[bytes, int]]] = field(default_factory=dict)
    added: int = 0
    duplicates: int = 0
    length: int = 0
    last_id: int = 0

    def live(self, now: int) -> dict[bytes, list[tuple[bytes, int]]]:
        out = {}
        for pid, iids in self.producers.items():
            kept = [(iid, i) for iid, i in iids if now - (i >> 64) < self.duration * 1000]
            if kept:
                out[pid] = kept
        return out

    def lookup(self, pid: bytes, iid: bytes, now: int) -> int | None:
        for known, entry_id in self.live(now).get(pid, []):
            if known == iid:
                return entry_id
        return None

    def record(self, pid: bytes, iid: bytes, entry_id: int) -> None:
        """Remember (pid, iid); the producer's oldest entries beyond maxsize go. The FIFO is in
        entry order (an XADD's entry is the newest; XIDMPRECORD may name an older one)."""
        iids = [(k, i) for k, i in self.producers.get(pid, []) if k != iid]
        iids.append((iid, entry_id))
        iids.sort(key=lambda item: item[1])
        self.producers[pid] = iids[-self.maxsize :]
        self.added += 1

    def configure(self, duration: int, maxsize: int) -> None:
        if (duration, maxsize) != (self.duration, self.maxsize):
            self.duration, self.maxsize = duration, maxsize
            self.producers = {}


class IdmpHistory(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.clock = [T0]
        self.node = Node(self.clock)
        self.replica = Node(self.clock, lag=T0, replay=True)  # its clock reads near 0
        self.applied = 0
        self.model: dict[bytes, MStream] = {}
        self.defaults = (100, 100)

    def run(self, *argv: bytes) -> Any:
        return self.node.run(*argv)

    def now(self) -> int:
        return self.clock[0]

    def created(self, key: bytes) -> MStream:
        s = self.model[key] = MStream(*self.defaults)
        return s

    # -- writes ------------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), pid=st.sampled_from(PIDS), iid=st.sampled_from(IIDS),
          value=st.sampled_from(VALUES), auto=st.booleans(), nomkstream=st.booleans(),
          trim=st.sampled_from([None, None, b"0", b"1", b"3"]))
    def xadd_idmp(self, key: bytes, pid: bytes, iid: bytes, value: bytes, auto: bool, nomkstream: bool,
                  trim: bytes | None) -> None:
        argv = [b"XADD", key] + ([b"NOMKSTREAM"] if nomkstream else [])
        if trim is not None:
            argv += [b"MAXLEN", b"~" if trim == b"3" else b"=", trim]
        fields = [b"f", value] if auto else [b"f", value, b"iid", iid]
        argv += [b"IDMPAUTO", pid] if auto else [b"IDMP", pid, iid]
        argv += [b"*", *fields]
        reply = self.run(*argv)
        s = self.model.get(key)
        if s is None and nomkstream:
            assert reply is None
            return
        if s is None:
            s = self.created(key)
        token = b"auto:" + value if auto else iid  # the model's name for the iid
        original = s.lookup(pid, token, self.now())
        if original is not None:
            assert reply == b"%d-%d" % (original >> 64, original & ((1 << 64) - 1)), (argv, reply)
            s.duplicates += 1
            return
        entry_id = parse_id(reply)
        assert entry_id > s.last_id and entry_id >> 64 >= self.now()
        s.last_id = entry_id
        s.length += 1
        s.record(pid, token, entry_id)
        if trim is not None:
            s.length = self.run(b"XLEN", key)

    @rule(key=st.sampled_from(KEYS))
    def xadd_plain(self, key: bytes) -> None:
        reply = self.run(b"XADD", key, b"*", b"f", b"plain")
        s = self.model.get(key) or self.created(key)
        s.last_id = parse_id(reply)
        s.length += 1

    @rule(key=st.sampled_from(KEYS), duration=st.sampled_from([None, 1, 2, 100]),
          maxsize=st.sampled_from([None, 1, 2, 3, 100]), now=st.booleans())
    def xcfgset(self, key: bytes, duration: int | None, maxsize: int | None, now: bool) -> None:
        if not now:  # half as often: a change forgets every iid
            return
        argv = [b"XCFGSET", key]
        if duration is not None:
            argv += [b"IDMP-DURATION", b"%d" % duration]
        if maxsize is not None:
            argv += [b"IDMP-MAXSIZE", b"%d" % maxsize]
        reply = self.run(*argv)
        s = self.model.get(key)
        if duration is None and maxsize is None:
            assert isinstance(reply, hiredis.ReplyError)
            return
        if s is None:
            assert str(reply) == "ERR no such key"
            return
        assert reply == b"OK"
        s.configure(duration if duration is not None else s.duration, maxsize if maxsize is not None else s.maxsize)

    @precondition(lambda self: any(s.length for s in self.model.values()))
    @rule(data=st.data(), pid=st.sampled_from(PIDS), iid=st.sampled_from(IIDS))
    def xidmprecord(self, data: st.DataObject, pid: bytes, iid: bytes) -> None:
        key = data.draw(st.sampled_from([k for k, s in self.model.items() if s.length]), label="key")
        entries = self.run(b"XRANGE", key, b"-", b"+")
        raw = data.draw(st.sampled_from([e[0] for e in entries]), label="entry")
        entry_id = parse_id(raw)
        s = self.model[key]
        reply = self.run(b"XIDMPRECORD", key, pid, iid, raw)
        known = s.lookup(pid, iid, self.now())
        if known is not None and known != entry_id:
            assert isinstance(reply, hiredis.ReplyError), reply
            return
        assert reply == b"OK"
        if known is None:
            s.record(pid, iid, entry_id)

    @rule(key=st.sampled_from(KEYS), how=st.sampled_from([b"XDEL", b"XTRIM", b"DEL"]))
    def remove(self, key: bytes, how: bytes) -> None:
        s = self.model.get(key)
        if how == b"DEL":
            self.run(b"DEL", key)
            self.model.pop(key, None)
        elif how == b"XTRIM":
            self.run(b"XTRIM", key, b"MAXLEN", b"1")
            if s is not None:
                s.length = min(s.length, 1)
        elif s is not None and s.length:
            first = self.run(b"XRANGE", key, b"-", b"+", b"COUNT", b"1")[0][0]
            assert self.run(b"XDEL", key, first) == 1
            s.length -= 1

    @rule(duration=st.sampled_from([1, 2, 100]), maxsize=st.sampled_from([2, 100]), now=st.booleans())
    def server_settings(self, duration: int, maxsize: int, now: bool) -> None:
        """stream-idmp-*: what new streams start with (drawn twice, to run about half as often)."""
        if not now:
            return
        self.run(b"CONFIG", b"SET", b"stream-idmp-duration", b"%d" % duration)
        self.run(b"CONFIG", b"SET", b"stream-idmp-maxsize", b"%d" % maxsize)
        self.defaults = (duration, maxsize)

    @rule(ms=st.sampled_from([0, 1, 400, 999, 1000, 1700, 2500]))
    def tick(self, ms: int) -> None:
        self.clock[0] += ms

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def xinfo_agrees_with_the_model(self) -> None:
        for key, s in self.model.items():
            flat = self.run(b"XINFO", b"STREAM", key)
            info = dict(zip(flat[0::2], flat[1::2]))
            live = s.live(self.now())
            assert [info[name] for name in (b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked",
                                             b"iids-added", b"iids-duplicates", b"length")] == [
                s.duration, s.maxsize, len(live), sum(map(len, live.values())), s.added, s.duplicates, s.length,
            ], (key, info, s)
            value = self.node.server.keyspace.dbs[0][key]
            assert isinstance(value, StreamValue)
            value._check()

    @invariant()
    def a_replica_replaying_the_effects_matches(self) -> None:
        new = self.node.effects[self.applied :]
        self.applied = len(self.node.effects)
        self.replica.apply(new)
        assert self.replica.digest() == self.node.digest()

    def teardown(self) -> None:
        if not hasattr(self, "node"):
            return
        fresh = Node(self.clock, lag=-5000, replay=True)  # this one's clock runs ahead
        fresh.apply(self.node.effects)
        assert fresh.digest() == self.node.digest()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "snap")
            write_snapshot(path, self.node.server.keyspace, SnapshotMeta("a" * 40))
            loaded = Keyspace(16)
            load_snapshot(path, loaded)
        assert digest_keyspace(loaded) == self.node.digest()


IdmpHistory.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestIdmpHistory = IdmpHistory.TestCase
