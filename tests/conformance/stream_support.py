"""Support for the stream differential suites: typed decoding of raw RESP replies, masking
of the time-dependent fields of consumer-group replies, and blocked-client plumbing.

Idle times and delivery timestamps differ between two servers by construction, so the
stream tests compare them *inside the test*: each masked value is first checked to be
plausible (an idle time is a small non-negative number, a timestamp is close to the wall
clock), then replaced by a marker, and the rest of the reply is compared exactly. Nothing
here is a global allowlist rule: a test asks for each mask explicitly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.conformance.harness import Arg, Pair, RawConnection

# An idle time above this (ms) cannot come from a test that runs in seconds.
MAX_PLAUSIBLE_IDLE_MS = 120_000
# A delivery/seen timestamp must be within this many ms of the wall clock.
MAX_CLOCK_SKEW_MS = 600_000


@dataclass(frozen=True)
class R:
    """One decoded RESP value: `kind` is its type byte ('+', '-', ':', '$', '*', '%', '~',
    '_', ',', '#', '(', '=', '>'), `value` bytes/int/None or a tuple of R (arrays, sets) or
    a tuple of (key, value) pairs (maps). A RESP2 null bulk is ('$', None), a null array
    ('*', None)."""

    kind: str
    value: Any

    def __repr__(self) -> str:
        return f"{self.kind}{self.value!r}"


MASK = R("?", "masked")


def parse(data: bytes) -> R:
    value, end = _parse(data, 0)
    assert end == len(data), f"trailing bytes after reply: {data[end:]!r}"
    return value


def _parse(data: bytes, pos: int) -> tuple[R, int]:
    kind = chr(data[pos])
    nl = data.index(b"\r\n", pos)
    head = data[pos + 1 : nl]
    pos = nl + 2
    if kind in "$=!":
        n = int(head)
        if n < 0:
            return R(kind, None), pos
        return R("-" if kind == "!" else kind, data[pos : pos + n]), pos + n + 2
    if kind in "*~>":
        n = int(head)
        if n < 0:
            return R(kind, None), pos
        items = []
        for _ in range(n):
            item, pos = _parse(data, pos)
            items.append(item)
        return R(kind, tuple(items)), pos
    if kind == "%":
        pairs = []
        for _ in range(int(head)):
            k, pos = _parse(data, pos)
            v, pos = _parse(data, pos)
            pairs.append((k, v))
        return R(kind, tuple(pairs)), pos
    if kind == ":":
        return R(kind, int(head)), pos
    if kind == "_":
        return R(kind, None), pos
    return R(kind, head), pos  # + - , # (


# ---------------------------------------------------------------------------------------
# Navigating replies
# ---------------------------------------------------------------------------------------


def items(v: R) -> list[R]:
    """Elements of an array (or set)."""
    assert v.kind in "*~" and v.value is not None, f"not an array: {v!r}"
    return list(v.value)


def pairs(v: R) -> list[tuple[R, R]]:
    """Key/value pairs of a RESP3 map or of a RESP2 flat key/value array."""
    if v.kind == "%":
        return list(v.value)
    flat = items(v)
    assert len(flat) % 2 == 0, f"odd flat map: {v!r}"
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


def as_dict(v: R) -> dict[bytes, R]:
    return {k.value: val for k, val in pairs(v)}


def make_map(like: R, kv: Sequence[tuple[R, R]]) -> R:
    """A map of the same encoding as `like` (RESP3 map or RESP2 flat array)."""
    if like.kind == "%":
        return R("%", tuple(kv))
    flat: list[R] = []
    for k, val in kv:
        flat += [k, val]
    return R("*", tuple(flat))


def without_field(v: R, name: bytes) -> tuple[R, R | None]:
    """`v` (a map) without `name`, and the removed value (None if absent)."""
    kept = [(k, val) for k, val in pairs(v) if k.value != name]
    removed = [val for k, val in pairs(v) if k.value == name]
    return make_map(v, kept), (removed[0] if removed else None)


def replace_field(v: R, name: bytes, fn: Callable[[R], R]) -> R:
    return make_map(v, [(k, fn(val) if k.value == name else val) for k, val in pairs(v)])


def map_items(v: R, fn: Callable[[R], R]) -> R:
    """An array with `fn` applied to each element."""
    return R(v.kind, tuple(fn(x) for x in items(v)))


# ---------------------------------------------------------------------------------------
# Masking time-dependent values (after checking them)
# ---------------------------------------------------------------------------------------


def mask_idle(v: R, allow_never: bool = False) -> R:
    """An idle/inactive time in ms: must be small and non-negative (-1 = never, if allowed)."""
    assert v.kind == ":", f"idle time is not an integer: {v!r}"
    if allow_never and v.value == -1:
        return R(":", -1)
    assert 0 <= v.value <= MAX_PLAUSIBLE_IDLE_MS, f"implausible idle time {v.value}"
    return MASK


def mask_clock(v: R) -> R:
    """An absolute Unix time in ms: must be close to the wall clock."""
    assert v.kind == ":", f"timestamp is not an integer: {v!r}"
    now = time.time_ns() // 1_000_000
    assert abs(v.value - now) <= MAX_CLOCK_SKEW_MS, f"timestamp {v.value} is far from now ({now})"
    return MASK


def mask_xpending_extended(v: R) -> R:
    """XPENDING key group [IDLE n] start end count [consumer]: [id, consumer, idle, count]."""

    def one(entry: R) -> R:
        e = items(entry)
        assert len(e) == 4, f"pending entry of {len(e)} elements: {entry!r}"
        return R(entry.kind, (e[0], e[1], mask_idle(e[2]), e[3]))

    return map_items(v, one)


def mask_consumer_info(v: R) -> R:
    """One XINFO CONSUMERS element: `idle` masked (and `inactive`, if present)."""
    v = replace_field(v, b"idle", mask_idle)
    if b"inactive" in as_dict(v):
        v = replace_field(v, b"inactive", lambda x: mask_idle(x, allow_never=True))
    return v


def mask_stream_full(v: R) -> R:
    """XINFO STREAM ... FULL: delivery times in PELs and consumer seen/active times masked."""

    def nack(entry: R) -> R:
        # group PEL: [id, consumer, delivery-time, count]; consumer PEL: [id, delivery-time, count]
        e = list(items(entry))
        e[-2] = mask_clock(e[-2])
        return R(entry.kind, tuple(e))

    def consumer(c: R) -> R:
        c = replace_field(c, b"seen-time", mask_clock)
        if b"active-time" in as_dict(c):
            c = replace_field(c, b"active-time", lambda x: x if x.value == -1 else mask_clock(x))
        return replace_field(c, b"pending", lambda p: map_items(p, nack))

    def group(g: R) -> R:
        g = replace_field(g, b"pending", lambda p: map_items(p, nack))
        return replace_field(g, b"consumers", lambda cs: map_items(cs, consumer))

    return replace_field(v, b"groups", lambda gs: map_items(gs, group))


def drop_72_consumer_fields(v: R, field: bytes) -> tuple[R, list[R | None]]:
    """Remove a 7.2-only consumer field from every element of an array of consumer maps."""
    removed: list[R | None] = []
    out = []
    for c in items(v):
        c2, val = without_field(c, field)
        out.append(c2)
        removed.append(val)
    return R(v.kind, tuple(out)), removed


# ---------------------------------------------------------------------------------------
# Comparing through a Pair with a transform
# ---------------------------------------------------------------------------------------


def check_masked(pair: Pair, fn: Callable[[R], R], *args: Arg) -> tuple[R, R]:
    """Send to both; assert fn(oracle) == fn(rill); return the raw decoded (oracle, rill)."""
    raw_o, raw_r = pair.both(*args)
    o, r = parse(raw_o), parse(raw_r)
    assert r.kind != "-" or o.kind == "-", f"{_show(args)}: rill error {r!r}, redis {o!r}"
    assert fn(r) == fn(o), f"{_show(args)} [RESP{pair.proto}]\n  redis: {o!r}\n  rill:  {r!r}"
    return o, r


def _show(args: Iterable[Arg]) -> str:
    return " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in args)


# ---------------------------------------------------------------------------------------
# Blocked clients
# ---------------------------------------------------------------------------------------


def connect(port: int, proto: int) -> RawConnection:
    conn = RawConnection(port)
    if proto == 3:
        conn.call("HELLO", "3")
    return conn


def blocked_clients(conn: RawConnection) -> int | None:
    """`blocked_clients` from INFO clients, None if the server does not report it."""
    raw = conn.call("INFO", "clients")
    v = parse(raw)
    if v.kind not in "$=" or v.value is None:
        return None
    for line in v.value.split(b"\r\n"):
        if line.startswith(b"blocked_clients:"):
            return int(line.split(b":", 1)[1])
    return None


def wait_blocked(conn: RawConnection, n: int, timeout: float = 5.0) -> None:
    """Wait until the server reports `n` blocked clients.

    A server whose INFO does not report blocked_clients gets a fixed grace period instead:
    the blocked command was sent before this call, and a server serves one connection's
    command as soon as it reads it.
    """
    deadline = time.monotonic() + timeout
    while True:
        count = blocked_clients(conn)
        if count is None:
            time.sleep(0.3)
            return
        if count == n:
            return
        assert time.monotonic() < deadline, f"expected {n} blocked clients, server reports {count}"
        time.sleep(0.01)
