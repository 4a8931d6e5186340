"""A streaming query's offset: per stream the last entry ID read, and what a later batch needs
to vouch for it — the replication history it was read under (replid and fenced mode's epoch),
a fingerprint of each stream's entry at its position (to notice a history that no longer holds
it), and in consumer-group mode the query's consumer ID.

Spark checkpoints offsets as JSON and compares them as JSON text, so `to_json` is deterministic
(sorted keys). Offsets written before these fields existed, ``{"stream": "id"}``, still parse.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline import ids


@dataclass(frozen=True)
class Offset:
    positions: Mapping[str, int]  # stream -> last entry ID read (the next batch reads after it)
    replid: str = ""  # the history the positions were read in ("" unknown)
    epoch: int = 0
    consumer: str = ""  # consumer-group mode: the query's consumer ID
    tails: Mapping[str, str] = field(default_factory=dict)  # stream -> fingerprint of its entry at its position

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"streams": {s: ids.fmt(self.positions[s]) for s in sorted(self.positions)}}
        if self.replid:
            out["history"] = {"epoch": self.epoch, "replid": self.replid}
        if self.consumer:
            out["consumer"] = self.consumer
        if self.tails:
            out["tails"] = {s: self.tails[s] for s in sorted(self.tails)}
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Offset:
        if "streams" not in data or not isinstance(data["streams"], dict):
            # The original form: only the positions.
            return Offset({s: ids.parse(v) for s, v in data.items()})
        history = data.get("history") or {}
        return Offset(
            positions={s: ids.parse(v) for s, v in data["streams"].items()},
            replid=str(history.get("replid", "")),
            epoch=int(history.get("epoch", 0)),
            consumer=str(data.get("consumer", "")),
            tails=dict(data.get("tails") or {}),
        )


def fingerprint(entry_id: bytes | str, fields: Sequence[bytes]) -> str:
    """A short digest of an entry (its ID and fields): two histories that reissued an ID for
    another entry disagree on it."""
    h = hashlib.blake2b(digest_size=8)
    h.update(entry_id if isinstance(entry_id, bytes) else entry_id.encode())
    for item in fields:
        h.update(len(item).to_bytes(4, "big"))
        h.update(item)
    return h.hexdigest()
