"""Fuzzing the C scanner of the log (node/log/_resp_scan.c) against its Python fallback
(node/log/scan.py): on any bytes, whole, cut, damaged or random, `check_units` gives the same
verdict and `command_end` the same end at every position; what they accept is whole commands
(hiredis reads back exactly those bytes). `make asan-fuzz` runs this under AddressSanitizer."""

from __future__ import annotations

import os

import hiredis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.log import _resp_scan
from node.log import scan as python_scan
from tests.unit.native import logs
from tests.unit.native.logs import FUZZ, any_bytes, command, damaged, encode, fenced, log


def _check(data: bytes) -> str | None:
    with fenced(data):
        return _resp_scan.check_units(data)


def _end(data: bytes, pos: int) -> int:
    with fenced(data):
        return _resp_scan.command_end(data, pos)


def _commands(data: bytes) -> list[list[bytes]]:
    """The commands `command_end` delimits, each read back by hiredis."""
    commands, pos = [], 0
    while pos < len(data):
        end = _end(data, pos)
        assert end > pos
        reader = hiredis.Reader()
        reader.feed(data, pos, end - pos)
        commands.append(reader.gets())
        assert reader.gets() is False  # exactly one command up to `end`
        pos = end
    return commands


@FUZZ
@given(any_bytes)
def test_the_c_and_python_scanners_agree_on_any_bytes(data: bytes) -> None:
    assert _check(data) == python_scan._check_units(data)
    for pos in range(len(data) + 1):
        assert _end(data, pos) == python_scan._command_end(data, pos), pos


@FUZZ
@given(st.lists(command, max_size=12))
def test_a_log_of_whole_commands_splits_into_them(commands: list[list[bytes]]) -> None:
    data = b"".join(encode(c) for c in commands)
    assert _commands(data) == commands


@FUZZ
@given(st.one_of(log, damaged()))
def test_accepted_bytes_are_whole_commands_and_units(data: bytes) -> None:
    if _check(data) is None:
        commands = _commands(data)
        assert b"".join(encode(c) for c in commands) == data
        names = [c[0].lower() for c in commands if c[0].lower() in (b"multi", b"exec")]
        assert names == [b"multi", b"exec"] * (len(names) // 2)


@FUZZ
@given(log, st.data())
def test_a_cut_log_is_refused_unless_cut_between_commands(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(0, len(data)))
    ends, pos = {0}, 0
    while pos < len(data):
        pos = _end(data, pos)
        ends.add(pos)
    whole = _check(data) is None
    if cut in ends and whole:
        # Between commands: the prefix passes unless it ends inside a MULTI.
        verdict = _check(data[:cut])
        assert verdict is None or verdict == "the batch ends inside a unit"
    elif cut not in ends:
        assert _check(data[:cut]) is not None
        last = max(end for end in ends if end < cut)
        assert _end(data[:cut], last) == -1


@pytest.mark.parametrize("pos", [-1, -(2**62), 6, 2**62])
def test_a_position_outside_the_data_is_an_index_error_in_both(pos: int) -> None:
    data = encode([b"PING"])[:5]
    with pytest.raises(IndexError):
        _resp_scan.command_end(data, pos)
    with pytest.raises(IndexError):
        python_scan._command_end(data, pos)


@pytest.mark.parametrize("bad", [None, "*1\r\n", bytearray(b"*1\r\n"), memoryview(b"*1\r\n"), 1])
def test_anything_but_bytes_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        _resp_scan.check_units(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _resp_scan.command_end(bad, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _resp_scan.command_end(b"", 0, 0)  # type: ignore[call-arg]
    with pytest.raises((TypeError, OverflowError)):
        _resp_scan.command_end(b"", bad if not isinstance(bad, int) else 2**64)  # type: ignore[arg-type]


def test_under_address_sanitizer_the_fence_is_armed() -> None:
    """`make asan-fuzz` preloads ASan's runtime: the fuzz tests then poison the byte after
    each input (logs.fenced), without which a one-byte overread goes unseen."""
    assert (logs._POISONING is not None) == ("libasan" in os.environ.get("LD_PRELOAD", ""))
