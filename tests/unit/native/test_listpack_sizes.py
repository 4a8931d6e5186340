"""The C appender sizes entries as Redis listpacks do (node/engine/_logged_xadd.c) and so
does node/engine/listpack_size.py, which is the definition (the ordinary XADD path and XINFO
use it): the two must agree exactly, or node splits, `XTRIM ~` and XINFO would depend on
which path an entry took. Checked through `append_run` itself, one entry at a time, at every
edge of every size rule: each integer encoding's bounds and the canonical-integer rules of a
value, every string length the C path takes, the ID deltas, the field count and the split
rule's own comparison."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from node.engine import _logged_xadd
from node.engine.listpack_size import lp_entry_size, lp_int_size
from tests.unit.native.logs import FUZZ, encode

_ONE_BYTE_VARINT = 128  # the C path takes values shorter than this


def _c_entry_size(value: bytes, ms: int = 7, seq: int = 3, base_ms: int = 5, master_seq: int = 9,
                  names: list[bytes] | None = None) -> int | None:
    """The listpack bytes append_run counts for one same-fields entry (None: not taken)."""
    names = names or [b"f"]
    argv = [b"XADD", b"s", b"%d-%d" % (ms, seq)]
    for name in names:
        argv += [name, value]
    _, count, _, _, _, lp, _, _ = _logged_xadd.append_run(
        encode(argv), array("q", [0]).tobytes(), 0, b"s", names, 0, base_ms, master_seq, 0, 0, 0, 0, 0, 0, 1 << 30, 0
    )
    return lp if count else None


def _python_entry_size(value: bytes, ms: int = 7, seq: int = 3, base_ms: int = 5, master_seq: int = 9,
                       names: list[bytes] | None = None) -> int:
    names = names or [b"f"]
    return lp_entry_size((ms << 64) | seq, (base_ms << 64) | master_seq, names, [value] * len(names), True)


def _edges() -> list[int]:
    bounds = [0, 127, 4095, 32767, 8388607, 2147483647, 2**63 - 1]
    bounds += [-b - 1 for b in bounds]
    return sorted({b + d for b in bounds for d in range(-3, 4)})


_NOT_CANONICAL = [b"", b"-", b"+1", b"-0", b"00", b"007", b"-07", b" 1", b"1 ", b"1\x00", b"--1", b"0x1", b"1e3",
                  b"1" * 19, b"1" * 20, b"1" * 21, b"9" * 20, b"-" + b"9" * 19, b"-" + b"1" * 20, b"\xd9"]


@pytest.mark.parametrize("value", [b"%d" % v for v in _edges()] + _NOT_CANONICAL)
def test_integers_and_near_integers_are_sized_alike(value: bytes) -> None:
    assert _c_entry_size(value) == _python_entry_size(value)


def test_every_string_length_the_c_path_takes_is_sized_alike() -> None:
    for n in range(_ONE_BYTE_VARINT):
        for fill in (b"x", b"1"):  # "11...1" is an integer up to 19 digits
            assert _c_entry_size(fill * n) == _python_entry_size(fill * n), n
    assert _c_entry_size(b"x" * _ONE_BYTE_VARINT) is None  # the ordinary way's


@pytest.mark.parametrize("delta", sorted({b + d for b in (0, 127, 4095, 32767, 8388607, 2**31 - 1, 2**32 - 1)
                                          for d in (-1, 0, 1) if 0 <= b + d < 2**32}))
def test_id_deltas_are_sized_alike(delta: int) -> None:
    # ms - base_ms and seq - master_seq, positive and negative (a later ms, a lower seq).
    base_ms, master_seq = 10**12, 2**32 - 1
    for ms, seq in ((base_ms + delta, master_seq + 1), (base_ms + 1, delta), (base_ms + delta, 0)):
        if seq < 2**32 and (ms, seq) > (base_ms, master_seq):
            assert _c_entry_size(b"v", ms, seq, base_ms, master_seq) == \
                _python_entry_size(b"v", ms, seq, base_ms, master_seq), (ms, seq)


@pytest.mark.parametrize("fields", [1, 2, 123, 124, 125, 126, 200])
def test_field_counts_are_sized_alike(fields: int) -> None:
    names = [b"f%d" % i for i in range(fields)]
    assert _c_entry_size(b"1", names=names) == _python_entry_size(b"1", names=names)


@FUZZ
@given(st.one_of(st.integers(-(2**64), 2**64).map(lambda v: b"%d" % v), st.binary(max_size=_ONE_BYTE_VARINT - 1),
                 st.lists(st.sampled_from(b"-+0123456789 "), max_size=22).map(bytes)),
       st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_any_value_and_ids_are_sized_alike(value: bytes, msd: int, seq: int) -> None:
    assume(msd or seq)  # above the master entry
    base_ms, master_seq = 1000, 0
    assert _c_entry_size(value, base_ms + msd, seq, base_ms, master_seq) == \
        _python_entry_size(value, base_ms + msd, seq, base_ms, master_seq)


@pytest.mark.parametrize(("live", "tombs"), [(0, 0), (127, 0), (127, 1), (4095, 1), (60000, 60000)])
def test_the_split_rule_compares_the_node_as_redis_does(live: int, tombs: int) -> None:
    """streamAppendItem splits when the listpack's bytes plus the entry's would reach the cap:
    an entry is taken at one byte below, refused at the cap itself."""
    data = encode([b"XADD", b"s", b"7-1", b"f", b"value"])
    lp_base = 1000
    size = len(b"f") + len(b"value")
    limit = lp_base + lp_int_size(live) + lp_int_size(tombs) + size

    def taken(cap: int, max_entries: int = 0) -> bool:
        result = _logged_xadd.append_run(data, array("q", [0]).tobytes(), 0, b"s", [b"f"], 0, 7, 0, 0, 0, 0,
                                         lp_base, live, tombs, cap, max_entries)
        return result[1] == 1

    assert taken(limit + 1) and not taken(limit)
    assert taken(limit + 1, live + tombs + 1)
    if live + tombs:  # stream-node-max-entries 0 is no limit
        assert not taken(limit + 1, live + tombs)
