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


def _word(arg: bytes | str | int) -> str:
    return (arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)).upper()


def normalise(args: Sequence[bytes | str | int], reply: bytes, proto: int) -> bytes:
    """Return `reply` with allowlisted differences replaced by a fixed marker (or removed)."""
    if len(args) >= 2 and _word(args[0]) == "XINFO" and _word(args[1]) == "STREAM":
        return _without_idmp_fields(reply)
    return reply
