"""A toy state machine for replication tests: an append-only list of records.

Each log unit is one RESP command `ADD <record>`; a batch is several. Applying parses the
whole batch first and only then commits it (all-or-nothing, as the StateMachine contract
asks). The digest is a running sha256 over the records, so two machines with equal digests
hold the same records in the same order. A snapshot is the records re-encoded as units.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def encode(record: bytes) -> bytes:
    return b"*2\r\n$3\r\nADD\r\n$%d\r\n%s\r\n" % (len(record), record)


def parse(data: bytes) -> list[bytes]:
    """Records of a concatenation of units; ValueError on anything else."""
    records: list[bytes] = []
    pos = 0
    prefix = b"*2\r\n$3\r\nADD\r\n$"
    while pos < len(data):
        if not data.startswith(prefix, pos):
            raise ValueError(f"not an ADD unit at byte {pos}")
        pos += len(prefix)
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            raise ValueError("truncated length")
        length = int(data[pos:eol])
        start = eol + 2
        if data[start + length : start + length + 2] != b"\r\n":
            raise ValueError("truncated record")
        records.append(data[start : start + length])
        pos = start + length + 2
    return records


class ToyMachine:
    def __init__(self, *, persistent: bool = False) -> None:
        self.records: list[bytes] = []
        self.offset = 0  # end offset of the last applied batch (or loaded snapshot)
        self._sha = hashlib.sha256()
        self.persistent = persistent
        self.fsynced = -1 if not persistent else 0
        self.snapshots_loaded = 0
        self.reject_next = False  # the next apply raises (a machine that cannot follow)
        self.batches_applied = 0

    def apply(self, data: bytes, end_offset: int) -> None:
        if self.reject_next:
            self.reject_next = False
            raise ValueError("rejected by the test")
        records = parse(data)
        for record in records:
            self._add(record)
        self.offset = end_offset
        self.batches_applied += 1

    def _add(self, record: bytes) -> None:
        self.records.append(record)
        self._sha.update(b"%d:%s" % (len(record), record))

    def load_snapshot(self, chunks: Sequence[bytes], offset: int) -> None:
        records = parse(b"".join(chunks))
        self.records = []
        self._sha = hashlib.sha256()
        for record in records:
            self._add(record)
        self.offset = offset
        self.snapshots_loaded += 1
        if self.persistent:
            self.fsynced = offset

    def snapshot(self) -> bytes:
        return b"".join(encode(record) for record in self.records)

    def fsynced_offset(self) -> int:
        return self.fsynced if self.persistent else -1

    def written_offset(self) -> int:
        return self.offset if self.persistent else -1

    def fsync(self) -> None:
        if self.persistent:
            self.fsynced = self.offset

    def digest(self) -> str:
        return self._sha.hexdigest()
