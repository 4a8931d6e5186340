"""Replication-only units (PUBLISH: Redis propagates it to replicas, never to the AOF): the
effect log gives them offsets only while it is replicated, after the unit that produced
them; a durable listener (the AOF) sees them as empty data; the AOF writer marks the offset
jumps with `#OFFSET:` annotations and the reader turns any valid prefix of the file back into
the log offset it ends at, so a restart resumes where the log was."""

from __future__ import annotations

import os
from pathlib import Path

from node.log.effect_log import EffectLog
from node.log.encode import encode_command
from node.persistence.aof import AofWriter
from node.persistence.aof_reader import read_aof

PUB = [b"PUBLISH", b"ch", b"hello"]
XADD = [b"XADD", b"s", b"1-1", b"f", b"v"]


class Recorder:
    def __init__(self) -> None:
        self.units: list[tuple[bytes, int]] = []

    def __call__(self, data: bytes, end_offset: int) -> None:
        self.units.append((data, end_offset))


def test_nothing_is_logged_for_replicas_while_no_replica_ever_attached() -> None:
    log, aof = EffectLog(), Recorder()
    log.add_listener(aof, durable=True)
    log.append_for_replicas(PUB)
    assert log.offset == 0 and aof.units == []
    assert not log.replicating()


def test_a_replication_only_unit_reaches_the_backlog_and_moves_the_aof_without_bytes() -> None:
    log, backlog, aof = EffectLog(), Recorder(), Recorder()
    log.add_listener(backlog)
    log.add_listener(aof, durable=True)
    log.append(0, XADD)
    log.append_for_replicas(PUB)
    unit, first = backlog.units[0]
    end = first + len(encode_command(PUB))
    assert unit.endswith(encode_command(XADD))
    assert backlog.units == [(unit, first), (encode_command(PUB), end)]
    assert aof.units == [(unit, first), (b"", end)]
    assert log.offset == end


def test_inside_a_unit_it_comes_after_the_unit() -> None:
    log, backlog = EffectLog(), Recorder()
    log.add_listener(backlog)
    with log.unit():
        log.append(0, XADD)
        log.append_for_replicas(PUB)
        log.append(0, [b"XDEL", b"s", b"1-1"])
    units = [data for data, _ in backlog.units]
    assert len(units) == 2 and units[1] == encode_command(PUB)
    assert encode_command([b"MULTI"]) in units[0] and units[0].endswith(encode_command([b"EXEC"]))


def test_a_muted_log_drops_it_as_any_effect() -> None:
    log, backlog = EffectLog(), Recorder()
    log.add_listener(backlog)
    with log.applying_primary_units():
        log.append_for_replicas(PUB)
    assert backlog.units == [] and log.offset == 0


def test_a_replica_keeps_the_primary_bytes_but_not_its_publishes_in_the_aof() -> None:
    log, backlog, aof = EffectLog(), Recorder(), Recorder()
    log.add_listener(backlog)
    log.add_listener(aof, durable=True)
    x, p = encode_command(XADD), encode_command(PUB)
    data = x + p + x + p
    log.replicated(data, 1000 + len(data), [(len(x), len(x + p)), (len(x + p + x), len(data))])
    assert backlog.units == [(data, 1000 + len(data))]
    assert aof.units == [(x, 1000 + len(x)), (x, 1000 + len(x + p + x)), (b"", 1000 + len(data))]


def _write_units(path: str, start: int, units: list[tuple[bytes, bool]], write_each: bool = True) -> tuple[int, list[int]]:
    """Units (bytes, kept) through an AofWriter, a write after each (or one at the end);
    returns the log's end and the log offset after each unit."""
    writer = AofWriter(path, start)
    offset, ends = start, []
    for data, kept in units:
        offset += len(data)
        writer.append(data if kept else b"", offset)
        if write_each:
            writer.write()
        ends.append(offset)
    writer.write()
    writer.close()
    return offset, ends


def test_the_aof_keeps_no_publish_and_ends_at_the_log_offset(tmp_path: Path) -> None:
    path = str(tmp_path / "a.aof")
    x, p = encode_command(XADD), encode_command(PUB)
    end, _ = _write_units(path, 500, [(x, True), (p, False), (p, False), (x, True), (p, False)], write_each=False)
    raw = Path(path).read_bytes()
    assert b"PUBLISH" not in raw
    assert raw == x + b"#OFFSET:%d\r\n" % (500 + len(x + p + p)) + x + b"#OFFSET:%d\r\n" % end
    commands: list[list[bytes]] = []
    result = read_aof(path, commands.append)
    assert result.ok and result.log_end(500) == end
    assert commands == [XADD, XADD]


def test_every_valid_prefix_of_the_file_ends_at_a_log_offset_the_log_had(tmp_path: Path) -> None:
    """A crash may cut the file anywhere: what the loader keeps must end at a unit boundary of
    the log (a partial resync from there is exact), never inside a unit or a skipped stretch."""
    path = str(tmp_path / "a.aof")
    x, p = encode_command(XADD), encode_command(PUB)
    units = [(x, True), (p, False), (x, True), (x, True), (p, False), (p, False), (x, True), (p, False)]
    _, ends = _write_units(path, 0, units)
    boundaries = {0, *ends}
    data = Path(path).read_bytes()
    for cut in range(len(data) + 1):
        Path(path).write_bytes(data[:cut])
        result = read_aof(path)
        assert result.status in ("ok", "truncated"), cut
        assert result.log_end(0) in boundaries, cut
    os.remove(path)


def test_other_annotations_are_skipped_as_redis_does(tmp_path: Path) -> None:
    path = str(tmp_path / "a.aof")
    Path(path).write_bytes(b"#TS:1700000000\r\n" + encode_command(XADD))
    commands: list[list[bytes]] = []
    result = read_aof(path, commands.append)
    assert result.ok and commands == [XADD]
    assert result.log_end(0) == len(encode_command(XADD))  # annotations are not log bytes
