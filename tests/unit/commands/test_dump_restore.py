"""DUMP and RESTORE through the command layer, on an in-process node with a fake clock: the
three cases of Redis 7.2's tests/unit/type/stream-cgroups.tcl that RESTORE a stream ("Redis:
..." below, their payloads copied from the .tcl), and Rill's rules: the options and their
errors in Redis's order, TTLs, and the effect logged (a replica and a log replay rebuild the
same key, deadline included).
"""

from __future__ import annotations

from typing import Any

import hiredis

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.server.resp import encode_one

T0 = 1_700_000_000_000

# stream-cgroups.tcl, "Loading from legacy (Redis <= v6.2.x, rdb_ver < 10) persistence": a
# DUMP of a 6.2 server (RDB 9, STREAM_LISTPACKS) after XADD x 2-0 .. 6-0, XDEL x 3-0, XGROUP
# CREATE x g1 0, XGROUP CREATE x g2 0, XREADGROUP GROUP g1 c11 COUNT 4 STREAMS x >,
# XTRIM x MAXLEN = 2.
LEGACY_62 = bytes.fromhex(
    "0f011000000000000000010000000000000000c3404a4057165700000023000201040101018464617461050001030100"
    "20010381610204200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a"
    "00ff02060002026731050004000000000000000100000000000000003ef783437a010000010000000000000002000000"
    "00000000003ef783437a01000001000000000000000400000000000000003ef783437a01000001000000000000000500"
    "000000000000003ef783437a0100000101036331313ef783437a01000004000000000000000100000000000000000000"
    "000000000002000000000000000000000000000000040000000000000000000000000000000500000000000000000267"
    "320000000009003d52ef6867521dfa"
)
# stream-cgroups.tcl, "Loading from legacy (Redis <= v7.0.x, rdb_ver < 11) persistence": a
# STREAM_LISTPACKS_2 value (7.0's type, without active times) in an RDB 11 footer, after XGROUP CREATE x g $ MKSTREAM, XADD x 1-1 f v, XREADGROUP GROUP
# g Alice STREAMS x >.
LEGACY_70 = bytes.fromhex(
    "130110000000000000000100000000000000011d1d0000000a0001010001010181660200010201000100018176020401"
    "ff01010101010000010101670101010100000000000000010000000000000001f55a71c784010000010105416c696365"
    "f55a71c78401000001000000000000000100000000000000010b00a7a914a527ff9b9b"
)


class Node:
    """An in-process node with a fake clock, a client session and its logged effects."""

    def __init__(self, replay: bool = False, role: str = "master") -> None:
        self.clock = [T0]
        self.node = RillNode(Config(), clock=lambda: self.clock[0])
        if role == "slave":  # as the replication side makes it one (node/replication/role.py)
            self.node.replication.role.become_replica()
        self.session = Session(self.node, 1)
        if replay:
            # A log replay (the AOF); on a replica, its link to the primary.
            self.session.flags.update(("replay", "master") if role == "slave" else ("replay",))
        self.effects: list[list[bytes]] = []
        reader = hiredis.Reader()

        def collect(data: bytes, offset: int) -> None:
            reader.feed(data)
            while (command := reader.gets()) is not False:
                self.effects.append(command)

        self.node.server.effects.add_listener(collect)

    def run(self, *argv: bytes | str | int) -> Any:
        """The reply as a client reads it (errors as hiredis.ReplyError)."""
        args = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        reply = self.node.server.execute(self.session, args)
        self.node.server.after_batch()
        reader = hiredis.Reader()
        reader.feed(encode_one(reply, 2))
        return reader.gets()

    def digest(self) -> bytes:
        return digest_keyspace(self.node.keyspace)


def _pairs(flat: list[Any]) -> dict[bytes, Any]:
    return dict(zip(flat[0::2], flat[1::2]))


def test_legacy_payloads_are_the_ones_in_the_tcl_file() -> None:
    # The hex above is the .tcl's "\x.." strings, converted; their CRCs hold.
    from node.rdb.dump import verify_payload

    assert verify_payload(LEGACY_62) == 9
    assert verify_payload(LEGACY_70) == 11  # a 7.2 development build's DUMP of type 19


def test_redis_loading_from_legacy_62_persistence() -> None:
    node = Node()
    assert node.run("RESTORE", "x", 0, LEGACY_62) == b"OK"
    reply = _pairs(node.run("XINFO", "STREAM", "x", "FULL"))
    assert reply[b"max-deleted-entry-id"] == b"0-0"
    assert reply[b"entries-added"] == 2
    groups = [_pairs(g) for g in reply[b"groups"]]
    assert groups[0][b"entries-read"] == 1
    assert groups[0][b"lag"] == 1
    assert groups[1][b"entries-read"] == 0
    assert groups[1][b"lag"] == 2


def test_redis_loading_from_legacy_70_persistence() -> None:
    node = Node()
    assert node.run("RESTORE", "x", 0, LEGACY_70) == b"OK"
    reply = _pairs(node.run("XINFO", "STREAM", "x", "FULL"))
    consumer = _pairs(_pairs(reply[b"groups"][0])[b"consumers"][0])
    assert consumer[b"seen-time"] == consumer[b"active-time"]


def test_redis_consumer_seen_time_and_active_time_survive_dump_and_restore() -> None:
    # stream-cgroups.tcl "Consumer seen-time and active-time" ("Simulate loading from RDB"; the
    # .tcl then reads key x, a slip: this checks the stream it dumped).
    node = Node()
    node.run("XGROUP", "CREATE", "mystream", "mygroup", "$", "MKSTREAM")
    node.run("XADD", "mystream", "*", "f", "v")
    node.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", 1, "STREAMS", "mystream", ">")
    node.clock[0] += 100
    node.run("XREADGROUP", "GROUP", "mygroup", "Alice", "COUNT", 1, "STREAMS", "mystream", ">")
    before = _pairs(_pairs(_pairs(node.run("XINFO", "STREAM", "mystream", "FULL"))[b"groups"][0])[b"consumers"][0])
    assert before[b"active-time"] == T0 and before[b"seen-time"] == T0 + 100
    dump = node.run("DUMP", "mystream")
    node.clock[0] += 5000
    node.run("DEL", "mystream")
    assert node.run("RESTORE", "mystream", 0, dump) == b"OK"
    after = _pairs(_pairs(_pairs(node.run("XINFO", "STREAM", "mystream", "FULL"))[b"groups"][0])[b"consumers"][0])
    assert after[b"seen-time"] == before[b"seen-time"]
    assert after[b"active-time"] == before[b"active-time"]


def test_dump_of_a_missing_or_expired_key_is_nil() -> None:
    node = Node()
    assert node.run("DUMP", "nope") is None
    node.run("SET", "k", "v", "PX", 10)
    node.clock[0] += 11
    assert node.run("DUMP", "k") is None


def test_restore_errors_come_in_redis_order() -> None:
    node = Node()
    node.run("SET", "k", "v")
    payload = node.run("DUMP", "k")
    # Options are parsed first, then the key, then the TTL, then the payload.
    assert str(node.run("RESTORE", "k", "x", b"junk", "NOPE")) == "ERR syntax error"
    assert str(node.run("RESTORE", "k", "x", b"junk")) == "BUSYKEY Target key name already exists."
    assert str(node.run("RESTORE", "n", "x", b"junk")) == "ERR value is not an integer or out of range"
    assert str(node.run("RESTORE", "n", -1, b"junk")) == "ERR Invalid TTL value, must be >= 0"
    assert str(node.run("RESTORE", "n", 0, b"junk")) == "ERR DUMP payload version or checksum are wrong"
    damaged = payload[:1] + bytes([payload[1] ^ 1]) + payload[2:]
    assert str(node.run("RESTORE", "n", 0, damaged)) == "ERR DUMP payload version or checksum are wrong"
    newer = payload[:-10] + (12).to_bytes(2, "little") + payload[-8:]
    assert str(node.run("RESTORE", "n", 0, newer)) == "ERR DUMP payload version or checksum are wrong"
    assert str(node.run("RESTORE", "n", 0, payload, "IDLETIME", -1)) == "ERR Invalid IDLETIME value, must be >= 0"
    assert str(node.run("RESTORE", "n", 0, payload, "FREQ", 256)) == "ERR Invalid FREQ value, must be >= 0 and <= 255"
    # IDLETIME and FREQ exclude each other (the second is a syntax error).
    assert str(node.run("RESTORE", "n", 0, payload, "FREQ", 1, "IDLETIME", 1)) == "ERR syntax error"
    assert node.run("RESTORE", "n", 0, payload, "IDLETIME", 5) == b"OK"
    assert node.effects[-1] == [b"RESTORE", b"n", b"0", payload, b"REPLACE"]


def test_restore_of_a_bad_value_changes_nothing() -> None:
    node = Node()
    node.run("SET", "k", "v")
    from node.rdb.crc64 import crc64

    body = b"\x15\x05"  # a stream that claims five listpacks and holds none
    body += (11).to_bytes(2, "little")
    payload = body + crc64(0, body).to_bytes(8, "little")
    effects = len(node.effects)
    assert str(node.run("RESTORE", "k", 0, payload, "REPLACE")) == "ERR Bad data format"
    assert node.run("GET", "k") == b"v"
    assert len(node.effects) == effects
    # A list, which Rill does not hold: refused, naming the type.
    body = b"\x12\x01\x02\x0b\x0b\x00\x00\x00\x01\x00\x81a\x02\xff" + (10).to_bytes(2, "little")
    payload = body + crc64(0, body).to_bytes(8, "little")
    assert str(node.run("RESTORE", "l", 0, payload)) == "ERR Bad data format (Rill holds strings and streams, not a list)"


def test_restore_with_ttl_logs_an_absolute_deadline() -> None:
    node = Node()
    node.run("XADD", "s", "1-1", "f", "v")
    payload = node.run("DUMP", "s")
    assert node.run("RESTORE", "s2", 5000, payload) == b"OK"
    assert node.run("PTTL", "s2") == 5000
    assert node.effects[-1] == [b"RESTORE", b"s2", b"%d" % (T0 + 5000), payload, b"REPLACE", b"ABSTTL"]
    assert node.run("RESTORE", "s3", T0 + 7000, payload, "ABSTTL") == b"OK"
    assert node.run("PEXPIRETIME", "s3") == T0 + 7000


def test_restore_past_deadline_creates_nothing_and_replace_logs_a_del() -> None:
    node = Node()
    node.run("SET", "k", "v")
    payload = node.run("DUMP", "k")
    effects = len(node.effects)
    assert node.run("RESTORE", "gone", T0 - 1, payload, "ABSTTL") == b"OK"
    assert node.run("EXISTS", "gone") == 0
    assert len(node.effects) == effects
    assert node.run("RESTORE", "k", T0 - 1, payload, "ABSTTL", "REPLACE") == b"OK"
    assert node.run("EXISTS", "k") == 0
    assert node.effects[-1] == [b"DEL", b"k"]


def test_a_replica_and_a_replay_rebuild_the_restored_key_with_its_deadline() -> None:
    primary = Node()
    primary.run("XADD", "s", "1-1", "f", "v")
    primary.run("XGROUP", "CREATE", "s", "g", "0")
    primary.run("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    payload = primary.run("DUMP", "s")
    primary.run("RESTORE", "copy", 1000, payload)
    primary.run("RESTORE", "s", 0, payload, "REPLACE")
    for follower in (Node(replay=True), Node(replay=True, role="slave")):
        follower.clock[0] += 2000  # its clock is past the deadline: it still stores the key
        for effect in primary.effects:
            follower.run(*effect)
        assert follower.digest() == primary.digest()
        assert follower.node.keyspace.expires[0].get(b"copy") == T0 + 1000


def test_nacked_entries_travel_as_the_pending_entries_of_one_consumer() -> None:
    # Redis 8.8's XNACK leaves entries pending with no owner; RDB 10 and 11 have no form for
    # that (a Redis 7 loader needs an owner, and crashes on XACK of one without): they go as
    # rill:nacked's, delivery time 0, and an unowned entry read back stays NACKed.
    from node.rdb.dump import create_payload, load_payload

    node = Node()
    for i in range(1, 5):
        node.run("XADD", "s", f"{i}-1", "f", "v")
    node.run("XGROUP", "CREATE", "s", "g", "0")
    node.run("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    assert node.run("XNACK", "s", "g", "SILENT", "IDS", 2, "2-1", "3-1") == 2
    payload = node.run("DUMP", "s")
    assert node.run("RESTORE", "copy", 0, payload) == b"OK"
    pending = node.run("XPENDING", "copy", "g", "-", "+", 10)
    assert [(p[0], p[1]) for p in pending] == [(b"1-1", b"alice"), (b"2-1", b"rill:nacked"), (b"3-1", b"rill:nacked"),
                                               (b"4-1", b"alice")]
    value = node.node.keyspace.dbs[0][b"copy"]
    value._check()
    # A PEL entry no consumer claims (how a NACKed entry would come without that consumer).
    stripped = load_payload(payload)
    group = stripped.groups[b"g"]  # type: ignore[union-attr]
    nacked = group.consumers.pop(b"rill:nacked")
    assert nacked.pending == 2
    assert node.run("RESTORE", "again", 0, create_payload(stripped)) == b"OK"
    again = node.node.keyspace.dbs[0][b"again"]
    again._check()
    assert list(again.groups[b"g"].nacked) == [(2 << 64) | 1, (3 << 64) | 1]
