"""Rill's dead letters: a consumer group's delivery limit, past which an entry leaves the group
for a dead-letter stream instead of being delivered again. No Redis release has this; Kafka
and Pulsar leave it to clients. Set with `RILL.XDEADLETTER SET key group MAXDELIVERIES n TO
dlkey` (node/commands/stream_dead_letters.py; docs/compatibility.md).

The rule: when a pending entry that has already been delivered `max_deliveries` times (its
delivery count, as XPENDING shows it) would be handed to a consumer again — claimed by
XREADGROUP CLAIM, XCLAIM or XAUTOCLAIM — or is handed back with XNACK, it is moved instead:

* an entry is added to the dead-letter stream (ID from the clock, as `XADD dlkey *`) whose
  fields are the delivery history, then the entry's own fields:
  `dead-letter-stream <key>`, `dead-letter-group <group>`, `dead-letter-id <id>`,
  `deliveries <count>`, `last-consumer <name>` (empty when NACKed), `last-delivery-ms <ms>`
  (0 when NACKed);
* the entry leaves the group's PEL (acknowledged for this group; other groups and the
  stream itself are untouched).

Both steps are one command's effects (`XADD dlkey <id> ...` then `XACK key group id`), which
the effect log writes as one MULTI/EXEC unit: a replica or an AOF replay applies both or
neither. An entry deleted from the stream since it was delivered has no fields to move: it
is dropped from the PEL as a claim would drop it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from node.engine.groups import UNOWNED, Nack
from node.engine.ids import format_id

Effect = list[bytes]


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """A group's delivery limit and where its dead letters go."""

    max_deliveries: int  # >= 1: deliveries after which an entry is not delivered again
    stream: bytes  # the dead-letter stream's key (same database)

    def digest_bytes(self) -> bytes:
        return b"%d %d:" % (self.max_deliveries, len(self.stream)) + self.stream

    def exhausted(self, nack: Nack) -> bool:
        """The entry was delivered as often as the policy allows."""
        return nack[1] >= self.max_deliveries


def history_fields(key: bytes, group_name: bytes, entry_id: int, nack: Nack, fields: list[bytes]) -> list[bytes]:
    """The dead-letter entry's fields: the delivery history, then the entry's own."""
    owner = nack[2]
    return [
        b"dead-letter-stream", key,
        b"dead-letter-group", group_name,
        b"dead-letter-id", format_id(entry_id),
        b"deliveries", b"%d" % nack[1],
        b"last-consumer", owner if owner is not UNOWNED else b"",
        b"last-delivery-ms", b"%d" % nack[0],
        *fields,
    ]  # fmt: skip


# Moves one pending entry to the dead-letter stream: (entry ID, its pending record) -> the
# effects of the move when it was moved (or dropped because its stream entry is gone), None
# when it stays (not exhausted, or the dead-letter key holds another type). Built by the
# command layer, which can reach the dead-letter key, for a group that has a policy.
Mover = Callable[[int, Nack], "list[Effect] | None"]
