"""Redis 8.2's consumer-group-aware deletion: the reference policies KEEPREF, DELREF and
ACKED, XDELEX, XACKDEL, and the policy half of XADD/XTRIM trimming.

An entry is *referenced* while a consumer group still needs it: it is in some group's PEL,
or some group has not been served it yet (its ID is above the group's last delivered ID).
The policies say what a deletion does about references:

* KEEPREF (the default) deletes the entry and leaves the PELs alone (XDEL's behaviour):
  a group reads the deleted entry back as an ID with no fields.
* DELREF deletes the entry and removes it from every group's PEL.
* ACKED deletes only an entry that is not referenced.

Per-ID results (XDELEX, XACKDEL): 1 deleted, -1 no such entry (XACKDEL: not pending in the
group), 2 kept because it is still referenced (ACKED). The rules below were checked against
a real redis-server 8.2.3 (tests/conformance/test_streams_redis8.py), and follow the later
fixes where Redis 8.6 changed them (docs/compatibility.md): with `~` an ACKED or DELREF trim
removes entries (8.2 removed none), and with no consumer group the policies change nothing.

Pure functions; each returns its result and the effects that replay it.
"""

from __future__ import annotations

from typing import Final

from node.engine.stream_value import StreamValue

Effect = list[bytes]

KEEPREF: Final = 0
DELREF: Final = 1
ACKED: Final = 2

POLICY_NAMES: Final = {b"keepref": KEEPREF, b"delref": DELREF, b"acked": ACKED}

DELETED: Final = 1
NOT_FOUND: Final = -1
STILL_REFERENCED: Final = 2


def is_referenced(value: StreamValue, entry_id: int) -> bool:
    """streamEntryIsReferenced: some group has the entry pending or has yet to read it."""
    groups = value.groups
    if not groups:
        return False
    return any(entry_id > group.last_id or entry_id in group.pel for group in groups.values())


def drop_references(value: StreamValue, entry_id: int) -> bool:
    """streamCleanupEntryCGroupRefs: remove the entry from every group's PEL; True if any
    held it."""
    dropped = False
    if value.groups:
        for group in value.groups.values():
            if group.ack(entry_id) is not None:
                dropped = True
    return dropped


def _delete(value: StreamValue, entry_id: int, policy: int) -> int:
    """One ID of XDELEX (and the deletion half of XACKDEL): its result code."""
    if policy == ACKED and is_referenced(value, entry_id):
        return STILL_REFERENCED
    deleted = value.delete(entry_id)
    if policy == DELREF:
        drop_references(value, entry_id)
    return DELETED if deleted else NOT_FOUND


def xdelex(value: StreamValue, argv: list[bytes], ids: list[int], policy: int) -> tuple[list[int], list[Effect]]:
    """XDELEX on an existing stream: a result code per ID, in order. Logged as sent when it
    deleted an entry or dropped a reference (the replica's identical state gives the same
    results)."""
    results: list[int] = []
    changed = False
    for entry_id in ids:
        refs_before = policy == DELREF and is_pending_anywhere(value, entry_id)
        code = _delete(value, entry_id, policy)
        results.append(code)
        changed = changed or code == DELETED or refs_before
    return results, [argv] if changed else []


def is_pending_anywhere(value: StreamValue, entry_id: int) -> bool:
    groups = value.groups
    return groups is not None and any(entry_id in g.pel for g in groups.values())


def xackdel(
    value: StreamValue, argv: list[bytes], group_name: bytes, ids: list[int], policy: int
) -> tuple[list[int], list[Effect]]:
    """XACKDEL: acknowledge each ID in the group, then delete it under the policy. An ID that
    is not pending in the group is left alone (-1); an acknowledged one answers 1 whether its
    entry was still there or not (Redis 8.2.3), or 2 when ACKED keeps it."""
    group = value.group(group_name)
    assert group is not None
    results: list[int] = []
    changed = False
    for entry_id in ids:
        if group.ack(entry_id) is None:
            results.append(NOT_FOUND)
            continue
        changed = True
        code = _delete(value, entry_id, policy)
        results.append(STILL_REFERENCED if code == STILL_REFERENCED else DELETED)
    return results, [argv] if changed else []


def policy_trim(value: StreamValue, maxlen: int, minid: int, approx: bool, limit: int, policy: int) -> tuple[int, int]:
    """Trimming under DELREF or ACKED on a stream with consumer groups (Stream.trim_per_entry):
    (entries removed, the first ID the walk did not reach). Exactly one of maxlen / minid
    is >= 0."""
    assert policy != KEEPREF and value.groups

    def keep(entry_id: int) -> bool:
        return is_referenced(value, entry_id)

    def removing(entry_id: int) -> None:
        drop_references(value, entry_id)

    if policy == ACKED:
        return value.trim_per_entry(maxlen, minid, approx, limit, keep, None)
    return value.trim_per_entry(maxlen, minid, approx, limit, None, removing)
