"""Fuzzing the RDB codec's C module (node/rdb/_rdb_native.c) against its Python fallbacks
(node/rdb/lzf.py, crc64.py, stream_codec.py): LZF compression gives the same bytes (or the
same "does not fit") and decompression the same verdict on any input, damaged ones included;
CRC-64 the same value; a stream node becomes the same listpack, and any listpack (stream
nodes written by the engine, then cut and damaged) the same node or the same refusal.
`make asan-fuzz` runs this under AddressSanitizer."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from node.engine.stream_node import StreamNode
from node.engine.stream_value import StreamValue
from node.rdb import _rdb_native, stream_codec
from node.rdb.crc64 import crc64_python
from node.rdb.listpack import ListpackError
from node.rdb.lzf import compress_python, decompress_python
from tests.unit.native.logs import FUZZ, fenced, id_part, value

# Data LZF finds matches in: few distinct bytes, repeats, or anything.
compressible = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda alphabet, n, seed: bytes(alphabet[(i * seed + i // 7) % len(alphabet)] for i in range(n)),
              st.binary(min_size=1, max_size=6), st.integers(0, 4000), st.integers(1, 97)),
    st.builds(lambda chunk, n: chunk * n, st.binary(min_size=1, max_size=40), st.integers(1, 200)),
)


@FUZZ
@given(compressible, st.data())
def test_lzf_compress_is_the_python_one(data: bytes, draw: st.DataObject) -> None:
    out_len = draw.draw(st.sampled_from([max(len(data) - 4, 0), len(data) * 2 + 16, len(data) // 2, 0, 1]))
    with fenced(data):
        native = _rdb_native.lzf_compress(data, out_len)
    assert native == compress_python(data, out_len)
    if native is not None:
        with fenced(native):
            assert _rdb_native.lzf_decompress(native, len(data)) == data


@FUZZ
@given(st.binary(max_size=600), st.integers(0, 2000))
def test_lzf_decompress_agrees_on_any_bytes(data: bytes, out_len: int) -> None:
    with fenced(data):
        assert _rdb_native.lzf_decompress(data, out_len) == decompress_python(data, out_len)


@FUZZ
@given(st.binary(max_size=2000), st.integers(0, 2**64 - 1))
def test_crc64_is_the_python_one(data: bytes, start: int) -> None:
    with fenced(data):
        assert _rdb_native.crc64(start, data) == crc64_python(start, data)


fields = st.lists(st.sampled_from([b"f", b"g", b"12", b"-3", b"x" * 70, b""]), min_size=1, max_size=3)


@st.composite
def stream(draw: st.DrawFn) -> StreamValue:
    """A stream the engine builds: rising IDs (near the packed-key edges too), its fields or
    the previous entry's, values of every listpack encoding, deletions, small nodes."""
    s = StreamValue()
    ms, seq = draw(id_part), draw(id_part)
    max_entries = draw(st.sampled_from([0, 3, 100]))
    max_bytes = draw(st.sampled_from([0, 120, 4096]))
    names = draw(fields)
    for _ in range(draw(st.integers(1, 60))):
        step = draw(st.integers(0, 9))
        if step < 6:
            seq += 1
        elif step < 8:
            ms, seq = ms + draw(st.integers(1, 2**33)), draw(id_part)
        else:
            names = draw(fields)
        entry_id = ((ms % 2**64) << 64) | (seq % 2**64)
        if entry_id <= s.last_id:
            continue
        flat = [x for name in names for x in (name, draw(value))]
        s.add(entry_id, flat, max_entries, max_bytes)
    for _ in range(draw(st.integers(0, 5))):
        ids = [entry_id for entry_id, _ in s.range(0, 2**128 - 1)]
        if ids:
            s.delete(draw(st.sampled_from(ids)))
    return s


def _native_listpack(node: StreamNode) -> bytes:
    saved = stream_codec._NATIVE_LISTPACK
    stream_codec._NATIVE_LISTPACK = _rdb_native.listpack_from_node  # type: ignore[misc]
    try:
        return stream_codec.node_listpack(node)
    finally:
        stream_codec._NATIVE_LISTPACK = saved  # type: ignore[misc]


def _native_node(master: int, lp: bytes) -> StreamNode | None:
    saved = stream_codec._NATIVE_NODE
    stream_codec._NATIVE_NODE = _rdb_native.node_from_listpack  # type: ignore[misc]
    try:
        with fenced(lp):
            return stream_codec.node_from_listpack(master, lp, None)
    except ListpackError:
        return None
    finally:
        stream_codec._NATIVE_NODE = saved  # type: ignore[misc]


def _python_node(master: int, lp: bytes) -> StreamNode | None:
    try:
        return stream_codec.node_from_listpack_python(master, lp, None)
    except ListpackError:
        return None


def _state(node: StreamNode | None) -> Any:
    if node is None:
        return None
    return (node.master, node.wide, list(node.keys), list(node.offsets), bytes(node.data), node.fields, node.long,
            node.dead, node.own, node.live, node.tombs, node.lp_base)


@FUZZ
@given(stream())
def test_a_node_becomes_the_same_listpack_and_back(s: StreamValue) -> None:
    for node in s.nodes:
        lp = _native_listpack(node)
        assert lp == stream_codec.node_listpack_python(node)
        assert _state(_native_node(node.master, lp)) == _state(node)


@FUZZ
@given(stream(), st.data())
def test_a_damaged_listpack_is_read_or_refused_alike(s: StreamValue, draw: st.DataObject) -> None:
    assume(s.nodes)  # every entry may have been deleted
    node = s.nodes[0]
    lp = bytearray(stream_codec.node_listpack_python(node))
    for _ in range(draw.draw(st.integers(1, 3))):
        kind = draw.draw(st.integers(0, 2))
        at = draw.draw(st.integers(0, len(lp) - 1))
        if kind == 0:
            lp[at] = draw.draw(st.integers(0, 255))
        elif kind == 1:
            del lp[at:]
            if not lp:
                break
        else:
            lp.insert(at, draw.draw(st.integers(0, 255)))
    data = bytes(lp)
    assert _state(_native_node(node.master, data)) == _state(_python_node(node.master, data))
