"""Hypothesis strategies shared by the fuzz tests of the C modules: effect logs as the
encoder writes them (XADDs in the log's form, other commands, MULTI/EXEC), and damaged
copies of them (cut, bytes flipped, inserted or removed, biased to RESP's own characters).

RILL_FUZZ_EXAMPLES sets how many examples each property tries (`make asan-fuzz` raises it).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=int(os.environ.get("RILL_FUZZ_EXAMPLES", "150")),
    deadline=None,  # an AddressSanitizer build is several times slower
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Bytes that change how RESP reads: a damage made of these is the likeliest to look valid.
RESP_BYTES = b"*$:+-\r\n0123456789xX"


def encode(argv: list[bytes]) -> bytes:
    """The log's RESP for a command, written plainly (the reference for both encoders)."""
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


# Arguments: short and plain, RESP-looking, or long enough for multi-digit headers.
argument = st.one_of(
    st.binary(max_size=12),
    st.sampled_from([b"", b"\r\n", b"*1\r\n", b"$3\r\n", b"0", b"-1", b"007", b"-0", b"1-1"]),
    st.builds(lambda n, c: c * n, st.integers(0, 1100), st.sampled_from([b"a", b"\r", b"\n"])),
)
# Values the C appender takes (< 128 bytes) and some it refuses; integers listpack packs.
value = st.one_of(
    st.binary(max_size=8),
    st.integers(-(2**64), 2**64).map(lambda v: b"%d" % v),
    st.builds(lambda n: b"v" * n, st.integers(120, 200)),
)
field = st.sampled_from([b"f", b"g", b"h", b"123", b""])
stream_key = st.sampled_from([b"s", b"t", b"u"])
# IDs near the edges: packed keys hold 32-bit deltas, IDs are 64-bit halves.
id_part = st.one_of(st.integers(0, 40), st.integers(0, 2**64 - 1),
                    st.sampled_from([2**32 - 1, 2**32, 2**63, 2**64 - 1]))


@st.composite
def xadd(draw: st.DrawFn, key: st.SearchStrategy[bytes] = stream_key) -> list[bytes]:
    """An XADD effect in the log's form, or a near miss (other spellings, a bad ID)."""
    name = draw(st.sampled_from([b"XADD", b"XADD", b"xadd", b"XAdd"]))
    ms, seq = draw(id_part), draw(id_part)
    entry_id = draw(st.sampled_from([b"%d-%d" % (ms, seq)] * 6 + [b"%d" % ms, b"*", b"0%d-%d" % (ms, seq),
                                                                   b"%d-%d" % (ms, 2**64), b"-%d" % seq]))
    pairs = draw(st.lists(st.tuples(field, value), min_size=1, max_size=4))
    return [name, draw(key), entry_id, *(item for pair in pairs for item in pair)]


@st.composite
def xadd_log(draw: st.DrawFn, keys: st.SearchStrategy[bytes] = stream_key, max_size: int = 40) -> list[list[bytes]]:
    """XADD effects as a primary logs them: IDs mostly rising (by a seq, a few ms, past 32-bit
    deltas, or now and then not at all), fields mostly those of the previous entry, values
    of every listpack size; with a few near misses among them."""
    ms, seq = draw(st.sampled_from([(1, 0), (10**12, 5), (2**32 - 3, 2**32 - 2), (2**63, 0), (2**64 - 10**6, 0)]))
    fields = [b"f", b"g"]
    commands = []
    for _ in range(draw(st.integers(0, max_size))):
        step = draw(st.integers(0, 199))
        if step < 130:
            seq += 1
        elif step < 180:
            ms, seq = ms + draw(st.integers(1, 5000)), draw(st.integers(0, 2))
        elif step < 185:
            ms += 2**32 + draw(st.integers(0, 4))  # a delta too wide for packed keys
        elif step < 190:
            seq += 2**32  # a seq beyond 32 bits
        elif step < 199:
            seq -= draw(st.integers(0, 1))  # not above the last ID: refused
        else:
            ms, seq = 2**64 - 1, 2**64 - 1 - draw(st.integers(0, 1))  # the last possible IDs
        ms, seq = min(ms, 2**64 - 1), max(min(seq, 2**64 - 1), 0)
        if draw(st.integers(0, 19)) == 0:
            fields = draw(st.sampled_from([[b"f", b"g"], [b"f"], [b"h", b"f", b"g"], [b"123"], [b"f"] * 130]))
        name = draw(st.sampled_from([b"XADD"] * 4 + [b"xadd", b"XAdd"]))
        argv = [name, draw(keys), b"%d-%d" % (ms, seq)]
        for f in fields:
            argv += [f, draw(value) if draw(st.integers(0, 4)) == 0 else b"%d" % draw(st.integers(0, 300))]
        commands.append(argv)
    return commands


def encode_all(commands: list[list[bytes]]) -> bytes:
    return b"".join(encode(c) for c in commands)


command = st.one_of(
    xadd(),
    st.lists(argument, min_size=1, max_size=6),
    st.sampled_from([[b"MULTI"], [b"EXEC"], [b"multi"], [b"eXeC"], [b"SET", b"k", b"v"]]),
)
log = st.lists(command, max_size=12).map(lambda commands: b"".join(encode(c) for c in commands))


@st.composite
def damaged(draw: st.DrawFn, base: st.SearchStrategy[bytes] = log) -> bytes:
    """`base` with a few bytes flipped, inserted or removed, and possibly cut short."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from(RESP_BYTES) | st.integers(0, 255))
        kind = draw(st.sampled_from(["flip", "insert", "delete"]))
        if kind == "insert" or not data:
            data.insert(at, byte)
        elif kind == "flip":
            data[min(at, len(data) - 1)] = byte
        else:
            del data[min(at, len(data) - 1)]
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


# Anything a log chunk could be: whole, damaged, or random bytes.
any_bytes = st.one_of(log, damaged(), st.binary(max_size=64), st.lists(st.sampled_from(RESP_BYTES)).map(bytes))


def _asan_poisoning() -> tuple[Callable[[int, int], None], Callable[[int, int], None]] | None:
    """AddressSanitizer's manual poisoning, when its runtime is loaded (`make asan-fuzz`)."""
    try:
        runtime = ctypes.CDLL(None)
        poison, unpoison = runtime.__asan_poison_memory_region, runtime.__asan_unpoison_memory_region
    except (OSError, AttributeError):
        return None
    for function in (poison, unpoison):
        function.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        function.restype = None
    return poison, unpoison


_POISONING = _asan_poisoning()
# Where a bytes object's data starts (CPython's PyBytesObject.ob_sval, after the header).
_BYTES_DATA = bytes.__basicsize__ - 1


@contextmanager
def fenced(*objects: bytes) -> Iterator[None]:
    """Makes the byte after each bytes object's data unreadable while the block runs, under
    AddressSanitizer. CPython ends every bytes object with a NUL inside its allocation, so a
    C read one byte past the data would go unnoticed: this turns it into a report. (Objects
    of 0 or 1 byte are shared singletons and stay as they are.)"""
    if _POISONING is None:
        yield
        return
    poison, unpoison = _POISONING
    ends = [id(o) + _BYTES_DATA + len(o) for o in objects if type(o) is bytes and len(o) > 1]
    for end in ends:
        poison(end, 1)
    try:
        yield
    finally:
        for end in ends:
            unpoison(end, 1)
