"""Stream entry IDs on the client side: parsing the forms a user writes in options, the
arithmetic offsets need (successor, predecessor) and splitting an ID range into contiguous
pieces that Spark tasks read in parallel.

An ID ``<ms>-<seq>`` is held as the int ``(ms << 64) | seq`` so IDs compare, sort and do
arithmetic as ints.  The pipeline must not import the node (it talks RESP only), so this is
its own small copy of what ``node.engine.ids`` does for the server.
"""

from __future__ import annotations

from typing import Final

MAX_PART: Final = (1 << 64) - 1
MIN_ID: Final = 0
MAX_ID: Final = (1 << 128) - 1


class InvalidStreamId(ValueError):
    """A string that is not a stream entry ID."""


def make(ms: int, seq: int) -> int:
    return (ms << 64) | seq


def ms_of(i: int) -> int:
    return i >> 64


def fmt(i: int) -> str:
    """The wire form ``<ms>-<seq>``."""
    return f"{i >> 64}-{i & MAX_PART}"


def parse(text: str | bytes, *, missing_seq: int = 0) -> int:
    """Parse ``<ms>-<seq>`` or ``<ms>`` (which takes ``missing_seq``: 0 for a range's start,
    ``MAX_PART`` for its end, as XRANGE does)."""
    raw = text.decode() if isinstance(text, bytes) else text
    ms_text, sep, seq_text = raw.partition("-")
    try:
        if not ms_text.isdigit() or (sep and not seq_text.isdigit()):
            raise ValueError
        ms = int(ms_text)
        seq = int(seq_text) if sep else missing_seq
    except ValueError:
        raise InvalidStreamId(f"{raw!r} is not a stream entry ID (expected <ms>-<seq>, e.g. 1700000000000-0)") from None
    if ms > MAX_PART or seq > MAX_PART:
        raise InvalidStreamId(f"{raw!r} is out of range: both parts of a stream ID are unsigned 64-bit numbers")
    return make(ms, seq)


def successor(i: int) -> int:
    """The smallest ID greater than ``i`` (``i`` itself at the very top)."""
    return min(i + 1, MAX_ID)


def predecessor(i: int) -> int:
    """The greatest ID smaller than ``i`` (0-0 stays 0-0)."""
    return max(i - 1, MIN_ID)


def split(lo: int, hi: int, pieces: int) -> list[tuple[int, int]]:
    """Cut the inclusive range ``[lo, hi]`` into at most ``pieces`` contiguous inclusive ranges
    that cover it exactly, cutting on millisecond boundaries (entries of one millisecond stay
    together; entry IDs are spread by time, so equal time slices are the cheap estimate of
    equal work that needs no scan)."""
    if lo > hi:
        return []
    first_ms, last_ms = lo >> 64, hi >> 64
    span = last_ms - first_ms + 1
    pieces = max(1, min(pieces, span))
    cuts = [first_ms + (span * k) // pieces for k in range(1, pieces)]
    bounds = [lo, *(make(ms, 0) for ms in cuts)]
    ranges = [(start, bounds[k + 1] - 1) for k, start in enumerate(bounds[:-1])]
    ranges.append((bounds[-1], hi))
    return ranges
