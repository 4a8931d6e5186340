"""Stream entry IDs as plain ints: packing, formatting and Redis-exact parsing.

A stream ID ``<ms>-<seq>`` (two unsigned 64-bit numbers) is held as the single int
``(ms << 64) | seq``.  Integer order is then ID order, so IDs compare, sort and bisect
without any object per ID.  This module owns the conversion between that int and the
wire form; the special tokens ``-``, ``+``, ``*``, ``$`` and ``>`` are the callers' business.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import i64

MAX_MS: Final = (1 << 64) - 1
MAX_SEQ: Final = (1 << 64) - 1
MIN_ID: Final = 0
MAX_ID: Final = (1 << 128) - 1

_SEQ_MASK: Final = MAX_SEQ
# Redis copies the argument into a 128-byte C buffer and rejects anything longer
# (streamGenericParseIDOrReply: `sdslen(o->ptr) > sizeof(buf)-1`).
_MAX_ID_ARG_LEN: Final = 127
# C isspace() in the "C" locale: what strtoull() skips before the number.
_C_SPACE: Final = frozenset(b" \t\n\v\f\r")
_MINUS: Final = 0x2D
_PLUS: Final = 0x2B


def make_id(ms: int, seq: int) -> int:
    """Pack ``ms-seq``; both must already be in ``[0, 2**64)`` (not checked: hot path)."""
    return (ms << 64) | seq


def id_ms(i: int) -> int:
    """Millisecond part of a packed ID."""
    return i >> 64


def id_seq(i: int) -> int:
    """Sequence part of a packed ID."""
    return i & _SEQ_MASK


def format_id(i: int) -> bytes:
    """Wire form ``b"<ms>-<seq>"`` of a packed ID."""
    # bytes %-formatting is a single C call; measured faster than f-string + encode().
    return b"%d-%d" % (i >> 64, i & _SEQ_MASK)


class _MsPrefix:
    """``(ms, b"<ms>-")`` of the millisecond format_parts saw last: XADD * formats many IDs of
    the same millisecond in a row.  One tuple, replaced whole, so a reader on another thread
    never pairs one millisecond with another's prefix."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[int, bytes] = (-1, b"")


_MS_PREFIX: Final = _MsPrefix()
_SMALL_DECIMALS: Final = tuple(b"%d" % i for i in range(1024))


def decimal(n: int) -> bytes:
    """``b"%d" % n`` for n >= 0, from a table while n is small (IDs' seqs mostly are)."""
    return _SMALL_DECIMALS[n] if n < 1024 else b"%d" % n


def format_parts(ms: int, seq: int) -> bytes:
    """``format_id((ms << 64) | seq)``, without the 128-bit int (the XADD * hot path)."""
    last = _MS_PREFIX.last
    if last[0] != ms:
        last = (ms, b"%d-" % ms)
        _MS_PREFIX.last = last
    return last[1] + decimal(seq)


def _string2ull(s: bytes) -> int | None:
    """Redis util.c ``string2ull``: value of ``s`` as uint64, or None.

    Redis first tries the strict ``string2ll`` (canonical signed 64-bit, rejected when
    negative) and then falls back to C ``strtoull(s, &end, 10)`` requiring the whole string to
    be consumed.  The fallback is lenient: it skips leading whitespace, takes a ``+`` or ``-``
    sign (``-`` negates modulo 2**64) and leading zeros.  Verified against redis-server 7.0:
    ``"01"``, ``"+1"``, ``" 1"``, ``"1-+5"``, ``"1--0"`` are valid IDs, ``"0- -1"`` is
    ``0-18446744073709551615``, while ``"1--1"``, ``"1 "`` and ``""`` are not.
    """
    n = len(s)
    p = 0
    while p < n and s[p] in _C_SPACE:
        p += 1
    negative = False
    if p < n and (s[p] == _MINUS or s[p] == _PLUS):
        negative = s[p] == _MINUS
        p += 1
    digits = s[p:]
    # bytes.isdigit() is ASCII-only, which is what strtoull accepts; it is also False for
    # the empty string, i.e. "no conversion", which string2ull reports as invalid.
    if not digits.isdigit():
        return None
    v = int(digits)
    if v > MAX_SEQ:
        return None  # strtoull sets ERANGE
    if not negative:
        return v
    # A canonical negative int64 ("-5", no spaces, no leading zero) is accepted by
    # string2ll first and then rejected as negative; anything else reaches strtoull,
    # which negates modulo 2**64.  LONG_STR_SIZE (21) caps what string2ll will look at.
    if p == 1 and digits[0] != 0x30 and v <= (1 << 63) and n < 21:
        return None
    return (-v) & MAX_SEQ


def _digits(raw: bytes, start: i64, end: i64) -> i64:
    """The value of ``raw[start:end]`` when it is 1 to 18 ASCII digits, else -1.  Eighteen
    digits stay below 2**63, so the sum never leaves a machine int: compiled, a tagged int
    past 2**30 takes a boxed multiply at every digit (a 13-digit millisecond cost ~0.5 us)."""
    if end <= start or end - start > 18:
        return -1
    value: i64 = 0
    i = start
    while i < end:
        c: i64 = raw[i]
        if c < 0x30 or c > 0x39:
            return -1
        value = value * 10 + (c - 0x30)
        i += 1
    return value


def _dash(raw: bytes) -> i64:
    """Index of the first '-' in raw, or len(raw)."""
    n: i64 = len(raw)
    i: i64 = 0
    while i < n and raw[i] != _MINUS:
        i += 1
    return i


def parse_id_parts(raw: bytes) -> tuple[int, int]:
    """``<ms>-<seq>`` in plain digits (how effects, the AOF and most clients write IDs) as
    its halves; (-1, -1) for any other form, which parse_id's full rules handle."""
    dash = _dash(raw)
    ms = _digits(raw, 0, dash)
    if ms < 0:
        return -1, -1
    seq = _digits(raw, dash + 1, len(raw))
    if seq < 0:
        return -1, -1
    return ms, seq


def parse_id(raw: bytes, missing_seq: int) -> int | None:
    """Parse ``<ms>`` or ``<ms>-<seq>`` exactly as Redis ``streamParseID`` does.

    Returns the packed ID, or None when Redis would reply "Invalid stream ID".  With only
    ``<ms>`` the sequence is ``missing_seq`` (0 for a start bound, MAX_SEQ for an end bound).
    """
    n = len(raw)
    if n > _MAX_ID_ARG_LEN:
        return None
    # Fast path: `digits` or `digits-digits` of at most 18 digits each (leading zeros are
    # fine, strtoull takes them); anything else gets Redis's full rules.
    dash = _dash(raw)
    ms = _digits(raw, 0, dash)
    if ms >= 0:
        # int(): an i64 shift would stay 64 bits wide.
        if dash == n:
            return (int(ms) << 64) | missing_seq
        seq = _digits(raw, dash + 1, n)
        if seq >= 0:
            return (int(ms) << 64) | int(seq)
    return _parse_id_slow(raw, missing_seq)


def _parse_id_slow(raw: bytes, missing_seq: int) -> int | None:
    # Redis works on a NUL-terminated copy: strchr() and strlen() stop at the first NUL,
    # so whatever follows an embedded NUL is ignored (after the length check above).
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    dash = raw.find(b"-")
    if dash < 0:
        ms = _string2ull(raw)
        seq: int | None = missing_seq
    else:
        ms = _string2ull(raw[:dash])
        seq = _string2ull(raw[dash + 1 :])
    if ms is None or seq is None:
        return None
    return (ms << 64) | seq


def incr_id(i: int) -> int | None:
    """Successor ID (Redis ``streamIncrID``), None if ``i`` is already MAX_ID."""
    # seq overflow carries into ms by plain integer addition.
    return i + 1 if i < MAX_ID else None


def decr_id(i: int) -> int | None:
    """Predecessor ID (Redis ``streamDecrID``), None if ``i`` is already 0-0."""
    return i - 1 if i > MIN_ID else None
