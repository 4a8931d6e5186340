"""Reviewed, intentional differences between Rill and redis-server replies.

Each rule names the command it applies to and why the difference is acceptable; every rule
is also listed in docs/compatibility.md. Keep this list short: a rule here hides a
difference from every differential test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

# XINFO STREAM (plain and FULL): Redis 8.6's idempotent-production fields, which Rill reports
# (it implements XADD IDMP) and the oracle, redis-server 7.0, does not know. They are six
# integer pairs right after recorded-first-entry-id, in this order; the rule removes exactly
# that run and fixes the reply's top-level count, so any other difference still shows.
_IDMP_FIELDS: Final = re.compile(
    rb"\$13\r\nidmp-duration\r\n:\d+\r\n\$12\r\nidmp-maxsize\r\n:\d+\r\n\$12\r\npids-tracked\r\n:\d+\r\n"
    rb"\$12\r\niids-tracked\r\n:\d+\r\n\$10\r\niids-added\r\n:\d+\r\n\$15\r\niids-duplicates\r\n:\d+\r\n"
)
_IDMP_PAIRS: Final = 6
_AFTER: Final = b"$23\r\nrecorded-first-entry-id\r\n"


def _without_idmp_fields(reply: bytes) -> bytes:
    match = _IDMP_FIELDS.search(reply)
    if match is None or reply.rfind(_AFTER, 0, match.start()) < 0:
        return reply
    head, _, rest = reply.partition(b"\r\n")
    kind, count = head[:1], int(head[1:])
    count -= _IDMP_PAIRS if kind == b"%" else 2 * _IDMP_PAIRS
    body = rest[: match.start() - len(head) - 2] + rest[match.end() - len(head) - 2 :]
    return kind + b"%d\r\n" % count + body


# XINFO STREAM FULL: Redis 8.8's `nacked-count` in each group (the size of its XNACK zone),
# which Rill reports and redis-server 7.0 does not know. The rule removes that one pair from
# each group map (fixing the map's count); nothing else in the group is touched.
_GROUP_START: Final = re.compile(rb"([*%])(\d+)\r\n\$4\r\nname\r\n\$\d+\r\n[^\r]*\r\n\$17\r\nlast-delivered-id\r\n")
_NACKED_COUNT: Final = re.compile(rb"\$12\r\nnacked-count\r\n:\d+\r\n")


def _without_nacked_count(reply: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    starts = list(_GROUP_START.finditer(reply))
    for i, start in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(reply)
        field = _NACKED_COUNT.search(reply, start.end(), end)
        if field is None:
            continue
        kind, count = start.group(1), int(start.group(2))
        count -= 1 if kind == b"%" else 2
        out += [reply[pos : start.start()], kind + b"%d" % count, reply[start.end(2) : field.start()]]
        pos = field.end()
    out.append(reply[pos:])
    return b"".join(out)


def _word(arg: bytes | str | int) -> str:
    return (arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)).upper()


def normalise(args: Sequence[bytes | str | int], reply: bytes, proto: int) -> bytes:
    """Return `reply` with allowlisted differences replaced by a fixed marker (or removed)."""
    if len(args) >= 2 and _word(args[0]) == "XINFO" and _word(args[1]) == "STREAM":
        return _without_nacked_count(_without_idmp_fields(reply))
    return reply
