"""Comparing DUMP payloads byte for byte where two servers' clocks differ: a consumer's seen
and active times and a pending entry's delivery time are raw little-endian 64-bit
milliseconds in the payload (never inside a compressed string), so two payloads of the same
value differ only in such 8-byte windows, both holding a time inside the window the
commands ran in, and in the CRC that covers them."""

from __future__ import annotations

from node.rdb.crc64 import crc64


def _time_at(payload: bytes, pos: int, lo: int, hi: int) -> bool:
    if pos < 0 or pos + 8 > len(payload) - 10:
        return False
    return lo <= int.from_bytes(payload[pos : pos + 8], "little", signed=True) <= hi


def assert_same_payload(got: bytes, expected: bytes, lo_ms: int, hi_ms: int) -> None:
    """`got` is `expected` byte for byte, except for clock readings in [lo_ms, hi_ms] (each
    payload's CRC is checked on its own then)."""
    assert len(got) == len(expected), f"payload lengths differ: {len(got)} != {len(expected)}"
    assert got[-10:-8] == expected[-10:-8], "RDB versions differ"
    body = len(got) - 8
    i = 0
    differed = False
    while i < body:
        if got[i] == expected[i]:
            i += 1
            continue
        window = next(
            (w for w in range(i - 7, i + 1) if _time_at(got, w, lo_ms, hi_ms) and _time_at(expected, w, lo_ms, hi_ms)),
            None,
        )
        assert window is not None, (
            f"payloads differ at byte {i} of {len(got)}: "
            f"{got[max(0, i - 8):i + 8].hex()} != {expected[max(0, i - 8):i + 8].hex()}"
        )
        differed = True
        i = window + 8
    if not differed:
        assert got[body:] == expected[body:], "CRCs differ where the payloads do not"
    for payload in (got, expected):
        assert crc64(0, payload[:-8]) == int.from_bytes(payload[-8:], "little")
