"""Redis 8.8's XNACK: handing pending entries back to their group without acknowledging them.

A NACKed entry stays in the group's PEL with no owner and delivery time 0 (so any claim's
idle time is met at once), at the end of the group's NACK zone (ConsumerGroup.nack), which
XREADGROUP CLAIM serves first. The mode sets its delivery counter: SILENT takes the
delivery back (count - 1, not below 0), FAIL keeps it, FATAL sets LLONG_MAX; RETRYCOUNT n
sets n whatever the mode. An ID not pending in the group is skipped, unless FORCE is given
and the stream has that entry: then it joins the NACK zone with count 0 (FATAL: LLONG_MAX;
RETRYCOUNT: n). The reply counts the IDs NACKed, each occurrence of a repeated ID again.

Effect: `XNACK key group FAIL IDS n id ... RETRYCOUNT c FORCE` for each run of consecutive
IDs that ended with the same count (the form Redis 8.8's AOF rewrite emits): with the count
spelled out and FORCE, it recreates the same PEL entries in the same NACK-zone order on a
replica or an AOF replay, whatever the mode was.
"""

from __future__ import annotations

from typing import Final

from node.engine.dead_letters import Mover
from node.engine.groups import FATAL_DELIVERIES, ConsumerGroup
from node.engine.ids import format_id
from node.engine.stream_value import StreamValue

Effect = list[bytes]

SILENT: Final = 0
FAIL: Final = 1
FATAL: Final = 2

MODE_NAMES: Final = {b"silent": SILENT, b"fail": FAIL, b"fatal": FATAL}


def new_count(mode: int, current: int | None, retry_count: int) -> int:
    """The delivery count an entry ends with (current None: FORCE creates it)."""
    if retry_count >= 0:
        return retry_count
    if mode == FATAL:
        return FATAL_DELIVERIES
    if current is None:
        return 0
    if mode == SILENT:
        return max(current - 1, 0)
    return current


def xnack(
    value: StreamValue,
    key: bytes,
    group_name: bytes,
    group: ConsumerGroup,
    ids: list[int],
    mode: int,
    retry_count: int,
    force: bool,
    mover: Mover | None = None,
) -> tuple[int, list[Effect]]:
    """XNACK; `retry_count` -1 when not given. Returns how many IDs were NACKed and the
    effects. With a dead-letter policy (`mover`), an entry NACKed after as many deliveries
    as it allows (FATAL: always) goes to the dead-letter stream right away; the XNACK is
    logged first, then the move."""
    done: list[tuple[int, int]] = []
    moves: list[Effect] = []
    pel = group.pel
    for entry_id in ids:
        nack = pel.get(entry_id)
        if nack is None:
            if not force or not value.contains(entry_id):
                continue
            count = new_count(mode, None, retry_count)
        else:
            count = new_count(mode, nack[1], retry_count)
        nacked = group.nack(entry_id, count)
        done.append((entry_id, count))
        if mover is not None:
            moves += mover(entry_id, nacked) or []
    return len(done), nack_effects(key, group_name, done) + moves


def nack_effects(key: bytes, group_name: bytes, done: list[tuple[int, int]]) -> list[Effect]:
    """One fully specified XNACK per run of consecutive (ID, count) pairs with one count."""
    effects: list[Effect] = []
    i = 0
    while i < len(done):
        count = done[i][1]
        j = i
        while j < len(done) and done[j][1] == count:
            j += 1
        effects.append([
            b"XNACK", key, group_name, b"FAIL", b"IDS", b"%d" % (j - i),
            *[format_id(entry_id) for entry_id, _ in done[i:j]],
            b"RETRYCOUNT", b"%d" % count, b"FORCE",
        ])  # fmt: skip
        i = j
    return effects
