"""Fuzzing the C encoder of the log (node/log/_resp_encode.c) against the Python fallback
(node/log/encode.py) and a plain reference: the same bytes for any list or tuple of bytes and
bytearrays, hiredis reads the arguments back, `encoded_size` counts them, and anything else
is a TypeError (the fallback's cue: as Python it encodes any bytes-like, compiled it refuses
what is not bytes). `make asan-fuzz` runs this under AddressSanitizer."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.log import _resp_encode, encode
from tests.unit.native.logs import FUZZ, argument, fenced
from tests.unit.native.logs import encode as reference


def _python_encode(argv: Any) -> bytes:
    parts = [encode.array_header(len(argv))]
    for arg in argv:
        parts += [encode.bulk_header(len(arg)), arg, b"\r\n"]
    return b"".join(parts)


argv_items = st.lists(st.one_of(argument, argument.map(bytearray)), max_size=20)


@FUZZ
@given(argv_items, st.booleans())
def test_the_c_encoder_writes_the_reference_bytes(items: list[Any], as_tuple: bool) -> None:
    argv = tuple(items) if as_tuple else items
    with fenced(*items):
        data = _resp_encode.encode_command(argv)
    assert data == reference([bytes(a) for a in items]) == _python_encode(argv)
    assert encode.encoded_size(argv) == len(data)
    if items:
        reader = hiredis.Reader()
        reader.feed(data)
        assert reader.gets() == [bytes(a) for a in items]
        assert reader.gets() is False


@FUZZ
@given(st.lists(st.integers(0, 10**6), max_size=3))
def test_header_digits_are_right_at_every_length(lengths: list[int]) -> None:
    # Lengths of every digit count, around the cached headers' limit (1024).
    argv = [b"x" * n for n in lengths] + [b"y" * 9, b"y" * 10, b"y" * 1023, b"y" * 1024]
    assert _resp_encode.encode_command(argv) == reference(argv)


@FUZZ
@given(argv_items, st.integers(0, 20), st.sampled_from([None, 1, "s", memoryview(b"m"), [b"l"], 1.5]))
def test_anything_but_bytes_is_a_type_error_and_the_fallback_encodes_bytes_likes(
    items: list[Any], at: int, bad: Any
) -> None:
    argv = [*items[:at], bad, *items[at:]]
    with pytest.raises(TypeError):
        _resp_encode.encode_command(argv)
    if isinstance(bad, memoryview):
        if encode.__file__.endswith(".py"):
            assert encode.encode_command(argv) == reference([bytes(a) for a in argv])
        else:
            # Compiled by mypyc, the fallback checks its declared Sequence[bytes] too.
            with pytest.raises(TypeError):
                encode.encode_command(argv)


@pytest.mark.parametrize("argv", [None, b"ab", iter([b"a"]), {b"a": 1}, "ab", 3])
def test_argv_must_be_a_list_or_a_tuple(argv: Any) -> None:
    with pytest.raises(TypeError):
        _resp_encode.encode_command(argv)
