"""The on-disk formats on their own (real files, no server process): the snapshot keeps every
piece of stream and group state and detects any damaged byte; the AOF reader finds exactly
where a file stops being whole and tells a cut tail from damage; the manifest parses what it
writes and names the line of what it refuses."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.engine.digest import digest_keyspace
from node.engine.keyspace import Keyspace
from node.engine.logged_run import logged_xadd_block
from node.engine.stream_value import StreamValue
from node.log.encode import encode_command
from node.persistence.aof_reader import read_aof
from node.persistence.manifest import AofFile, Manifest, ManifestError, parse_manifest
from node.persistence.snapshot import SnapshotError, SnapshotMeta, load_snapshot, read_meta, write_snapshot
from node.server.server import Server


@pytest.fixture
def server() -> Iterator[tuple[Server, Session]]:
    node = RillNode(Config())
    srv = node.server
    session = Session(node, 1)
    yield srv, session


def _run(srv: Server, session: Session, *args: Any) -> Any:
    return srv.execute(session, [a if isinstance(a, bytes) else str(a).encode() for a in args])


def _rich_state(srv: Server, session: Session, seed: int = 1) -> None:
    """Streams with every storage shape (shared and own fields, long values, tombstones,
    wide nodes after a huge ID gap, trimmed heads), groups with PELs, consumers, strings."""
    rng = random.Random(seed)
    for i in range(1, 700):
        key = f"s{i % 3}"
        fields = ["temp", rng.randrange(100), "unit", "C"] if rng.random() < 0.8 else ["other", "x" * rng.randrange(300)]
        _run(srv, session, "XADD", key, f"{i}-{rng.randrange(3)}", *fields)
    _run(srv, session, "XADD", "s0", f"{(1 << 62)}-5", "far", "future")  # a 32-bit ms delta overflow
    for i in range(0, 500, 7):
        _run(srv, session, "XDEL", "s1", f"{i}-0", f"{i}-1", f"{i}-2")
    _run(srv, session, "XTRIM", "s2", "MAXLEN", "=", "150")
    for key in ("s0", "s1", "s2"):
        _run(srv, session, "XGROUP", "CREATE", key, "g1", "0")
        _run(srv, session, "XGROUP", "CREATE", key, "g2", "$", "ENTRIESREAD", "3")
        _run(srv, session, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "40", "STREAMS", key, ">")
        _run(srv, session, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", "25", "STREAMS", key, ">")
        _run(srv, session, "XGROUP", "CREATECONSUMER", key, "g2", "idle")
    _run(srv, session, "XCLAIM", "s0", "g1", "carol", "0", "5-0", "5-1", "5-2", "RETRYCOUNT", "7")
    _run(srv, session, "XSETID", "s2", f"{10**12}-0", "ENTRIESADDED", "5000", "MAXDELETEDID", "600-0")
    _run(srv, session, "SET", "plain", "value")
    _run(srv, session, "SET", "volatile", "value", "PXAT", 4_000_000_000_000)
    _run(srv, session, "PEXPIREAT", "s1", 4_000_000_000_123)
    _run(srv, session, "SELECT", "5")
    _run(srv, session, "SET", "db5", b"\x00\xff binary")
    _run(srv, session, "SET", "db5-volatile", b"x", "PXAT", 4_100_000_000_000)
    _run(srv, session, "SELECT", "0")


def test_snapshot_round_trip_keeps_entries_counters_groups_and_consumers(server: tuple[Server, Session], tmp_path: Any) -> None:
    srv, session = server
    _rich_state(srv, session)
    path = str(tmp_path / "snap")
    meta = SnapshotMeta("a" * 40, "b" * 40, 77, 12345, 1_700_000_000)
    write_snapshot(path, srv.keyspace, meta)
    loaded = Keyspace(16)
    result = load_snapshot(path, loaded)
    assert result.meta == meta and read_meta(path) == meta
    assert result.keys == srv.keyspace.key_count()
    assert digest_keyspace(loaded) == digest_keyspace(srv.keyspace)
    assert [e.deadlines for e in loaded.expires] == [e.deadlines for e in srv.keyspace.expires]
    assert loaded.volatile_count() == 3
    for db_before, db_after in zip(srv.keyspace.dbs, loaded.dbs):
        for key, value in db_before.items():
            after = db_after[key]
            if isinstance(value, StreamValue):
                assert isinstance(after, StreamValue)
                after._check()
                assert after.node_master_ids() == value.node_master_ids()  # node boundaries too
                assert (after.length, after.last_id, after.max_deleted_id, after.entries_added) == (
                    value.length, value.last_id, value.max_deleted_id, value.entries_added)
                for name, group in value.sorted_groups():
                    g = after.group(name)
                    assert g is not None and (g.last_id, g.entries_read) == (group.last_id, group.entries_read)
                    assert dict(g.pel) == dict(group.pel)
                    for cname, c in group.consumers.items():
                        assert (g.consumers[cname].seen_time, g.consumers[cname].active_time) == (c.seen_time, c.active_time)
                        assert list(g.owned(g.consumers[cname])) == list(group.owned(c))
                        assert g.consumers[cname].pending == c.pending
            else:
                assert after == value
    # A loaded stream keeps working: appends go on in the last node.
    stream = loaded.dbs[0][b"s0"]
    assert isinstance(stream, StreamValue)
    stream.add((1 << 62 << 64) | 9, [b"a", b"b"])
    stream._check()


def test_snapshot_detects_any_damaged_byte_and_any_truncation(server: tuple[Server, Session], tmp_path: Any) -> None:
    srv, session = server
    for i in range(1, 40):
        _run(srv, session, "XADD", "s", f"{i}-0", "f", i)
    _run(srv, session, "XGROUP", "CREATE", "s", "g", "0")
    _run(srv, session, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    path = str(tmp_path / "snap")
    _run(srv, session, "SET", "k", "v", "PXAT", 4_000_000_000_000)
    write_snapshot(path, srv.keyspace, SnapshotMeta("a" * 40))
    data = Path(path).read_bytes()
    damaged = str(tmp_path / "damaged")
    for pos in range(0, len(data), 3):
        Path(damaged).write_bytes(data[:pos] + bytes([data[pos] ^ 0x01]) + data[pos + 1:])
        with pytest.raises(SnapshotError, match=r"^Bad snapshot file damaged at offset \d+"):
            load_snapshot(damaged, Keyspace(16))
    for cut in range(0, len(data), 5):
        Path(damaged).write_bytes(data[:cut])
        with pytest.raises(SnapshotError):
            load_snapshot(damaged, Keyspace(16))


def _aof_bytes() -> tuple[bytes, list[int]]:
    """An AOF body and the offsets where a replay may stop: after each command, except
    inside MULTI/EXEC, which is whole only with its EXEC."""
    units = [
        [[b"SELECT", b"0"], [b"XADD", b"s", b"1-0", b"f", b"v"]],
        [[b"SET", b"k", b"v\r\n$3"]],
        [[b"MULTI"], [b"XADD", b"s", b"2-0", b"f", b"w"], [b"SET", b"k", b"x"], [b"EXEC"]],
        [[b"XDEL", b"s", b"1-0"]],
    ]
    data = b""
    ends = []
    for unit in units:
        for argv in unit:
            data += encode_command(argv)
            if unit[0] != [b"MULTI"] or argv == [b"EXEC"]:
                ends.append(len(data))
    return data, ends


# The reader's chunk size: the default, and sizes that cut every command somewhere.
_CHUNK_SIZES = [4 * 1024 * 1024, 1, 7, 64]


def _xadd_blocks(taken: list[bytes]) -> Any:
    """An `append_block` that takes the blocks of logged XADDs (as the replay does, C's
    grouping), recording their bytes."""

    def append_block(data: bytes, pos: int) -> tuple[int, int]:
        end, groups = logged_xadd_block(data, pos)
        if groups:
            taken.append(data[pos:end])
        return end, sum(len(positions) // 8 for _, positions in groups)

    return append_block


@pytest.mark.parametrize("chunk_size", _CHUNK_SIZES)
def test_aof_reader_cuts_a_truncated_file_at_its_last_whole_unit(tmp_path: Any, chunk_size: int) -> None:
    data, ends = _aof_bytes()
    path = str(tmp_path / "a.aof")
    Path(path).write_bytes(data)
    commands: list[list[bytes]] = []
    result = read_aof(path, commands.append, chunk_size=chunk_size)
    assert result.ok and result.valid_up_to == len(data) and result.commands == 8 and len(commands) == 8
    for cut in range(len(data)):
        Path(path).write_bytes(data[:cut])
        for block in (None, _xadd_blocks([])):
            result = read_aof(path, append_block=block, chunk_size=chunk_size)
            assert result.status == ("ok" if cut in (0, *ends) else "truncated"), cut
            assert result.valid_up_to == max([0, *[e for e in ends if e <= cut]]), cut
            # Once MULTI is whole, a cut before EXEC's end leaves a transaction open.
            assert result.open_multi == (ends[2] + len(encode_command([b"MULTI"])) <= cut < ends[3]), cut


@pytest.mark.parametrize("chunk_size", _CHUNK_SIZES)
def test_aof_reader_hands_blocks_of_logged_xadds_to_append_block(tmp_path: Any, chunk_size: int) -> None:
    data, ends = _aof_bytes()
    path = str(tmp_path / "a.aof")
    Path(path).write_bytes(data)
    executed: list[list[bytes]] = []
    taken: list[bytes] = []
    result = read_aof(path, executed.append, _xadd_blocks(taken), chunk_size=chunk_size)
    assert result.ok and result.valid_up_to == len(data) and result.commands == 8
    # Both XADDs are taken (the one inside MULTI too: refusing there is the replay's job);
    # every other command is executed, in order.
    assert taken == [encode_command([b"XADD", b"s", b"1-0", b"f", b"v"]), encode_command([b"XADD", b"s", b"2-0", b"f", b"w"])]
    assert [argv[0] for argv in executed] == [b"SELECT", b"SET", b"MULTI", b"SET", b"EXEC", b"XDEL"]


def test_aof_reader_reads_a_command_larger_than_many_chunks(tmp_path: Any) -> None:
    value = bytes(range(256)) * 400  # 100 KB: 1,600 chunks of 64 bytes
    data = encode_command([b"SET", b"k", value]) + encode_command([b"SET", b"j", b"v"])
    path = str(tmp_path / "a.aof")
    Path(path).write_bytes(data)
    executed: list[list[bytes]] = []
    result = read_aof(path, executed.append, chunk_size=64)
    assert result.ok and result.commands == 2 and result.valid_up_to == len(data)
    assert executed == [[b"SET", b"k", value], [b"SET", b"j", b"v"]]


@pytest.mark.parametrize("chunk_size", _CHUNK_SIZES)
def test_aof_reader_reports_damage_with_its_offset(tmp_path: Any, chunk_size: int) -> None:
    data, ends = _aof_bytes()
    path = str(tmp_path / "a.aof")
    for pos, byte in ((ends[1], b"+"), (ends[1] + 1, b"x"), (ends[3] + 4, b"#"), (ends[1] + 4, b"-"), (ends[1] - 2, b"x")):
        Path(path).write_bytes(data[:pos] + byte + data[pos + 1:])
        for block in (None, _xadd_blocks([])):
            result = read_aof(path, append_block=block, chunk_size=chunk_size)
            assert result.status == "corrupt", pos
            assert result.valid_up_to == max(e for e in [0, *ends] if e <= pos)
            assert result.error_offset == result.valid_up_to  # the damaged command starts there
            assert result.error
    # Garbage after the last command is damage, not a short write.
    Path(path).write_bytes(data + b"hello\r\n")
    assert read_aof(path, chunk_size=chunk_size).status == "corrupt"


def test_manifest_round_trip_and_errors() -> None:
    manifest = Manifest(
        base=AofFile("appendonly.aof.2.base.rill", 2, "b"),
        incrs=(AofFile("appendonly.aof.3.incr.aof", 3, "i", 100), AofFile("appendonly.aof.4.incr.aof", 4, "i", 900)),
        history=(AofFile("appendonly.aof.1.base.rill", 1, "h"),),
    )
    parsed = parse_manifest(manifest.format(), "m")
    assert (parsed.base, parsed.incrs, parsed.history) == (manifest.base, manifest.incrs, manifest.history)
    assert parsed.base_seq == 2 and parsed.incr_seq == 4
    nxt, incr = parsed.with_new_incr("appendonly.aof", 1000)
    assert incr == AofFile("appendonly.aof.5.incr.aof", 5, "i", 1000)
    done = nxt.after_rewrite("appendonly.aof.3.base.rill", 3, covered=4)
    assert done.files() == [AofFile("appendonly.aof.3.base.rill", 3, "b"), incr]
    assert {f.name for f in done.history} == {
        "appendonly.aof.1.base.rill", "appendonly.aof.2.base.rill", "appendonly.aof.3.incr.aof", "appendonly.aof.4.incr.aof",
    }
    bad = {
        b"": "Found an empty AOF manifest",
        b"file a seq 1 type b\nfile b seq 2 type b\n": "at line 2 ('file b seq 2 type b'): Found duplicate base file information",
        b"file a.aof seq 2 type i startoffset 0\nfile b.aof seq 2 type i startoffset 5\n": "Found a non-monotonic sequence number",
        b"file ../x seq 1 type b\n": "File can't be a path, just a filename",
        b"file x seq 1 type z\n": "Unknown AOF file type",
        b"file x seq 1\n": "Invalid AOF manifest file format",
        b"file x seq 1 type b": "truncated",
    }
    for text, message in bad.items():
        with pytest.raises(ManifestError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_manifest(text, "m")


def test_manifest_records_a_new_replication_id_on_an_incr_file() -> None:
    a, b = "a" * 40, "b" * 40
    manifest, plain = Manifest(base=AofFile("appendonly.aof.1.base.rill", 1, "b")).with_new_incr("appendonly.aof", 0)
    assert manifest.recorded_identity() is None  # the base's identity holds
    manifest, marked = manifest.with_new_incr("appendonly.aof", 500, b, a, 501)
    manifest, after = manifest.with_new_incr("appendonly.aof", 800)
    text = manifest.format().decode()
    assert "file appendonly.aof.2.incr.aof seq 2 type i startoffset 500 replid " + b + " replid2 " + a + " secondoffset 501\n" in text
    parsed = parse_manifest(manifest.format(), "m")
    assert parsed.incrs == (plain, marked, after)
    assert parsed.recorded_identity() == marked  # the last file that records one
    # A rewrite covering the marked file drops its record: the new base carries the identity.
    assert parsed.after_rewrite("appendonly.aof.2.base.rill", 2, covered=2).recorded_identity() is None
    bad_lines = (
        f"file x seq 1 type i startoffset 0 replid {'A' * 40} replid2 {a} secondoffset 1\n",
        f"file x seq 1 type i startoffset 0 replid {b} replid2 short secondoffset 1\n",
        f"file x seq 1 type i startoffset 0 replid {b} replid2 {a} secondoffset -2\n",
        f"file x seq 1 type i startoffset 0 replid {b} replid2 {a} secondoffset x\n",
    )
    for line in bad_lines:
        with pytest.raises(ManifestError, match="Invalid replication id or second offset"):
            parse_manifest(line.encode(), "m")


def test_new_files_never_reuse_a_name_left_on_disk(tmp_path: Any) -> None:
    for name in ("appendonly.aof.7.base.rill", "appendonly.aof.9.incr.aof", "other.aof.20.incr.aof"):
        open(os.path.join(tmp_path, name), "w").close()
    manifest = Manifest().past_seqs_on_disk(str(tmp_path), "appendonly.aof")
    assert manifest.new_base_name("appendonly.aof") == ("appendonly.aof.8.base.rill", 8)
    assert manifest.with_new_incr("appendonly.aof", 0)[1].seq == 10


def test_a_snapshot_written_before_deadlines_existed_still_loads() -> None:
    # data/before-deadlines.rdb was written by the node as it was before keys could have a
    # time to live: a stream with a group and pending entries, and strings in two databases.
    path = os.path.join(os.path.dirname(__file__), "data", "before-deadlines.rdb")
    loaded = Keyspace(16)
    result = load_snapshot(path, loaded)
    assert result.keys == 3 and result.meta.replid == "c" * 40
    assert digest_keyspace(loaded) == b"f5ba3ebf17d49f8cb0ae2fbeab463e0383a06993"
    assert loaded.volatile_count() == 0
    assert loaded.dbs[0][b"greeting"] == b"hello" and loaded.dbs[3][b"n"] == b"42"
    orders = loaded.dbs[0][b"orders"]
    assert isinstance(orders, StreamValue) and orders.length == 29
    group = orders.group(b"shipping")
    assert group is not None and len(group.pel) == 5
