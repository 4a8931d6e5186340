"""`logged_xadd_block` and `Stream.append_logged_run` (C, node/engine/_logged_xadd.c) group a
replica's XADD effects by stream and append them straight from the log's bytes. That must
leave every stream exactly as the ordinary path (`stream_append.append_entry`, one parsed command at
a time) does: the same nodes, packed keys, offsets, data bytes, listpack accounting (which
decides node splits, XTRIM ~ and XINFO), counters and last ID, whatever the IDs, fields,
values, deletions, node limits and interleaving of streams."""

from __future__ import annotations

import random
from array import array

import pytest

from node.engine import logged_run as stream_module
from node.engine.stream_value import StreamValue
from node.log.encode import encode_command
from tests.unit.native.appender import apply_runs as _apply_runs
from tests.unit.native.appender import ordinary as _ordinary
from tests.unit.native.appender import state as _state


def test_the_native_appender_is_built() -> None:
    assert stream_module.NATIVE_BLOCK is not None and stream_module.NATIVE_APPEND_RUN is not None


def _at(*positions: int) -> bytes:
    return array("q", positions).tobytes()


# Strings listpack stores as integers of each size (and their neighbours that are strings).
_INTEGERS = [b"%d" % v for edge in (127, 4095, 32767, 8388607, 2147483647) for v in (edge, edge + 1, -edge - 1, -edge - 2)]
_VALUES = [*_INTEGERS, b"v", b"", b"0", b"7", b"123", b"-5", b"-0", b"007", b"-", b"1.5", b"+1", b"12a",
           b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
           b"-9223372036854775809", b"18446744073709551616", b"123456789012345678901",
           b"x" * 63, b"x" * 64, b"x" * 127, b"y" * 128, b"z" * 5000]


def _workload(rng: random.Random, n: int) -> list[list[bytes]]:
    commands = []
    ms, seq = rng.choice([(1, 0), (10**12, 5), (2**32 - 3, 2**32 - 2), (2**63, 0), (2**64 - 10**6, 0)])
    fields = [b"f", b"g"]
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            seq += 1
        elif r < 0.9:
            ms, seq = ms + rng.randrange(1, 1000), rng.randrange(3)
        elif r < 0.93:
            ms += 2**32 + rng.randrange(5)  # a node too wide for packed keys
        elif r < 0.96:
            seq += 2**32  # a seq beyond 32 bits
        elif r < 0.99:
            seq -= 1  # not above the last ID: refused
        elif r < 0.992:
            ms, seq = 2**64 - 1, 2**64 - 1 - rng.randrange(2)  # the last possible IDs
        ms = min(ms, 2**64 - 1)
        seq = max(min(seq, 2**64 - 1), 0)
        if rng.random() < 0.05:
            fields = rng.choice([[b"f", b"g"], [b"f"], [b"h", b"f", b"g"], [b"123"]])
        argv = [rng.choice([b"XADD", b"XADD", b"xadd", b"XAdd"]), rng.choice([b"s", b"s", b"s", b"t"]), b"%d-%d" % (ms, seq)]
        for f in fields:
            argv += [f, rng.choice(_VALUES) if rng.random() < 0.3 else b"%d" % rng.randrange(100)]
        commands.append(argv)
    return commands


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("max_entries", "max_bytes"), [(100, 4096), (0, 0), (7, 0), (0, 300), (3, 200)])
def test_runs_in_c_leave_the_stream_the_ordinary_path_leaves(seed: int, max_entries: int, max_bytes: int) -> None:
    rng = random.Random(seed)
    fast_value, ordinary_value = StreamValue(), StreamValue()
    fast_total = 0
    for _ in range(6):
        commands = _workload(rng, 150)
        data = b"".join(encode_command(c) for c in commands)
        fast, slow = _apply_runs(fast_value, b"s", data, max_entries, max_bytes)
        fast_total += fast
        expected = sum(1 for c in commands if c[1] == b"s" and _ordinary(ordinary_value, c, max_entries, max_bytes))
        assert fast + slow == expected
        assert _state(fast_value) == _state(ordinary_value)
        # Deletions and XSETID leave tombstones and IDs above the last live one.
        for value in (fast_value, ordinary_value):
            rng_copy = random.Random(seed * 7919 + fast_total)
            for _ in range(5):
                if value.length:
                    entries = value.range(0, 2**128 - 1, 0, False)
                    value.delete(rng_copy.choice(entries)[0])
            if rng_copy.random() < 0.3 and value.last_id < 2**128 - 10:
                value.last_id += rng_copy.randrange(1, 3)
        assert _state(fast_value) == _state(ordinary_value)
    # Wide nodes (IDs 2**32 ms apart) take the ordinary way: with no node limit, the first
    # such ID makes the rest of the stream one wide node.
    assert fast_total > 0 or any(n.wide for n in fast_value.nodes)


def test_most_entries_of_a_plain_workload_go_in_c() -> None:
    value, ordinary_value = StreamValue(), StreamValue()
    commands = [[b"XADD", b"s", b"%d-%d" % (1700000000000 + i // 5, i % 5), b"field", b"value"] for i in range(1000)]
    data = b"".join(encode_command(c) for c in commands)
    fast, slow = _apply_runs(value, b"s", data, 100, 4096)
    for c in commands:
        assert _ordinary(ordinary_value, c, 100, 4096)
    assert _state(value) == _state(ordinary_value)
    assert (fast, slow) == (990, 10)  # each node's first entry goes the ordinary way


def test_a_block_groups_logged_xadds_by_stream_and_ends_at_any_other_command() -> None:
    value = StreamValue()
    assert _ordinary(value, [b"XADD", b"s", b"1-1", b"f", b"v"], 100, 4096)
    units = [encode_command(c) for c in (
        [b"XADD", b"s", b"1-2", b"f", b"v"], [b"xadd", b"s", b"1-3", b"f", b"v"],
        [b"XADD", b"t", b"1-4", b"f", b"v"], [b"XADD", b"s", b"1-5", b"f", b"v"],
        [b"SET", b"k", b"v"], [b"XADD", b"s", b"1-6", b"f", b"v"])]
    starts = [sum(map(len, units[:i])) for i in range(len(units))]
    data = b"".join(units)
    end, groups = stream_module.logged_xadd_block(data, 0)
    assert end == starts[4]
    assert groups == [(b"s", _at(starts[0], starts[1], starts[3])), (b"t", _at(starts[2]))]
    assert value.append_logged_run(data, groups[0][1], 0, b"s", 100, 4096) == (3, 3)
    assert value.length == 4 and value.last_id == (1 << 64) | 5
    assert stream_module.logged_xadd_block(data, starts[4]) == (starts[4], [])
    assert stream_module.logged_xadd_block(data, starts[5]) == (len(data), [(b"s", _at(starts[5]))])
    # Not the log's form of an XADD: another spelling, options or a generated ID, too few
    # arguments; and a command cut short.
    for argv in ([b"XAdd", b"s", b"1-9", b"f", b"v"], [b"XADD", b"s", b"MAXLEN", b"1", b"1-9", b"f", b"v"],
                 [b"XADD", b"s", b"*", b"f", b"v"], [b"XADD", b"s", b"1-9", b"f"]):
        assert stream_module.logged_xadd_block(encode_command(argv), 0) == (0, [])
    assert stream_module.logged_xadd_block(encode_command([b"XADD", b"s", b"1-9", b"f", b"v"])[:-1], 0) == (0, [])
    # Another key's group: the run appends nothing.
    assert value.append_logged_run(data, groups[1][1], 0, b"s", 100, 4096) == (0, 0)


def test_a_block_holds_at_most_64_streams() -> None:
    data = b"".join(encode_command([b"XADD", b"k%d" % (i % 70), b"1-%d" % i, b"f", b"v"]) for i in range(140))
    end, groups = stream_module.logged_xadd_block(data, 0)
    assert [key for key, _ in groups] == [b"k%d" % i for i in range(64)]
    assert all(len(positions) == 8 for _, positions in groups)
    assert data[end:].startswith(encode_command([b"XADD", b"k64", b"1-64", b"f", b"v"]))


def test_a_run_drops_no_tombstone_it_would_have_to_drop() -> None:
    """XSETID may set the last ID below a deleted top entry (Redis checks the last live one):
    an XADD of that ID must remove the tombstone first, which only the ordinary way does."""
    values = StreamValue(), StreamValue()
    for value in values:
        for i in range(1, 6):
            assert _ordinary(value, [b"XADD", b"s", b"1-%d" % i, b"f", b"v"], 100, 4096)
        assert value.delete((1 << 64) | 5)
        value.last_id = (1 << 64) | 4
    data = b"".join(encode_command([b"XADD", b"s", b"1-%d" % i, b"f", b"w"]) for i in (5, 6, 7))
    assert values[0].append_logged_run(data, _at(0), 0, b"s", 100, 4096) == (0, 0)
    _apply_runs(values[0], b"s", data, 100, 4096)
    for i in (5, 6, 7):
        assert _ordinary(values[1], [b"XADD", b"s", b"1-%d" % i, b"f", b"w"], 100, 4096)
    assert _state(values[0]) == _state(values[1])


def test_a_run_stops_at_an_id_not_above_the_last_one() -> None:
    value = StreamValue()
    assert _ordinary(value, [b"XADD", b"s", b"1-1", b"f", b"v"], 100, 4096)
    value.last_id = (1 << 64) | 10  # XSETID 1-10
    refused = encode_command([b"XADD", b"s", b"1-10", b"f", b"v"])
    assert value.append_logged_run(refused, _at(0), 0, b"s", 100, 4096) == (0, 0)
    assert value.append_logged_run(encode_command([b"XADD", b"s", b"1-11", b"f", b"v"]), _at(0), 0, b"s", 100, 4096)[1] == 1
    assert value.length == 2 and value.last_id == (1 << 64) | 11
