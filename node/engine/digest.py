"""State digests (DEBUG DIGEST / DEBUG DIGEST-VALUE): a SHA1 signature of the data that does
not depend on key order, computed exactly as Redis's debug.c does for what Redis covers.

Redis's scheme: `xor_digest` XORs SHA1(data) into the digest (order-independent, used to
combine keys), `mix_digest` XORs then re-hashes (order-dependent, used inside one value).
Each key's digest is mix(key) then mix(type) then the value's elements, with "!!expire!!"
XORed in when the key has a time to live (whatever the deadline, as Redis does); the
database number is mixed into the total before its keys are XORed in.

Streams: Redis hashes the entries only. Rill also covers the stream's counters (last ID,
entries added, greatest deleted ID) so that replaying effects must reproduce them too
(DESIGN.md principle 2), but mixes them in only when they differ from what the entries
alone imply. A stream built by plain XADDs therefore has Redis's digest, and any two states
that differ in a counter still differ in digest.

Idempotent-production state (Redis 8.6's IDMP, which Redis's digest leaves out as it leaves
out groups) is covered when a stream has any other than the default: its settings, lifetime
counters and every producer's remembered iids in order with their entry IDs, all of which
the effects replicate (node/engine/idmp_ops.py). A stream that never saw IDMP keeps Redis's
digest.

Consumer groups (which Redis leaves out) are covered too, when a stream has any: each
group's name, last delivered ID and read counter, its consumers' names, and every pending
entry with its owner, delivery time and delivery count. That is exactly the group state
the effects replicate (XCLAIM ... TIME ... RETRYCOUNT, XGROUP SETID ... ENTRIESREAD,
XGROUP CREATECONSUMER); a consumer's seen/active times are not replicated by Redis's
scheme and are left out, so a replica's digest equals its primary's.
"""

from __future__ import annotations

import struct
from hashlib import sha1
from typing import Final

from node.engine.idmp import IdmpState
from node.engine.ids import MAX_ID, id_ms, id_seq
from node.engine.keyspace import Keyspace, Value
from node.engine.stream import Stream
from node.engine.stream_value import StreamValue

_ZERO: Final = bytes(20)
# Redis's object type numbers (server.h OBJ_STRING, OBJ_STREAM), hashed as big-endian u32.
_OBJ_STRING: Final = struct.pack(">I", 0)
_OBJ_STREAM: Final = struct.pack(">I", 6)
_VOLATILE: Final = b"!!expire!!"


def xor_digest(digest: bytes, data: bytes) -> bytes:
    # As 160-bit ints: one XOR instead of twenty (this runs for every stream element).
    return (int.from_bytes(digest) ^ int.from_bytes(sha1(data).digest())).to_bytes(20)


def mix_digest(digest: bytes, data: bytes) -> bytes:
    return sha1(xor_digest(digest, data)).digest()


def _stream_digest(digest: bytes, stream: Stream) -> bytes:
    # The entries' chain, continued from where the last digest of this stream (from the
    # same start) stopped: entries are only added after the last one (Stream.digests).
    start = digest
    cached = stream.digests.get(start) if stream.digests is not None else None
    if cached is None:
        last_entry = 0
        entries = stream.iter_all()
    else:
        digest, last_entry = cached
        entries = stream.iter_range(last_entry + 1, MAX_ID) if last_entry < MAX_ID else iter(())
    for entry_id, fields in entries:
        digest = mix_digest(digest, b"%d.%d" % (id_ms(entry_id), id_seq(entry_id)))
        for item in fields:
            digest = mix_digest(digest, item)
        last_entry = entry_id
    if stream.digests is None:
        stream.digests = {}
    if len(stream.digests) >= 4:
        stream.digests.clear()  # a key renamed again and again: keep a few starts only
    stream.digests[start] = (digest, last_entry)
    if (stream.last_id, stream.entries_added, stream.max_deleted_id) != (last_entry, stream.length, 0):
        digest = mix_digest(
            digest,
            b"!!stream-meta!! %d %d %d %d"
            % (stream.length, stream.last_id, stream.entries_added, stream.max_deleted_id),
        )
    if isinstance(stream, StreamValue):
        if stream.groups:
            digest = _groups_digest(digest, stream)
        idmp = stream.idmp_state()
        if idmp is not None:
            digest = _idmp_digest(digest, idmp)
    return digest


def _idmp_digest(digest: bytes, idmp: IdmpState) -> bytes:
    digest = mix_digest(
        digest, b"!!stream-idmp!! %d %d %d %d" % (idmp.duration, idmp.maxsize, idmp.added, idmp.duplicates)
    )
    # Up to 10,000 iids per producer: one SHA1 pass, mixed in once.
    h = sha1()
    for pid, iids in idmp.producers.items():
        h.update(b"%d %d:" % (len(iids), len(pid)) + pid)
        for iid, entry_id in iids.items():
            h.update(b"%d %d:" % (entry_id, len(iid)) + iid)
    return mix_digest(digest, h.digest())


def _groups_digest(digest: bytes, stream: StreamValue) -> bytes:
    for name, group in stream.sorted_groups():
        digest = mix_digest(digest, b"!!stream-group!!")
        digest = mix_digest(digest, name)
        digest = mix_digest(digest, b"%d %d" % (group.last_id, group.entries_read))
        # A PEL can hold millions of entries: hash it in one SHA1 pass, then mix that in.
        h = sha1()
        for c in group.sorted_consumers():
            h.update(b"%d:" % len(c.name) + c.name)
        h.update(b"|")
        for entry_id, (delivered, deliveries, owner) in group.pel.items():
            if owner is None:  # NACKed (groups.UNOWNED): no consumer name, not even b""
                h.update(b"%d %d %d -:" % (entry_id, delivered, deliveries))
            else:
                h.update(b"%d %d %d %d:" % (entry_id, delivered, deliveries, len(owner)) + owner)
        if group.nacked:
            # The NACK zone's order decides what XREADGROUP CLAIM serves first.
            h.update(b"|nacked " + b" ".join(b"%d" % entry_id for entry_id in group.nacked))
        if group.dead_letter is not None:
            h.update(b"|dead-letter " + group.dead_letter.digest_bytes())
        digest = mix_digest(digest, h.digest())
    return digest


def _object_digest(digest: bytes, value: Value) -> bytes:
    if type(value) is bytes:
        return mix_digest(mix_digest(digest, _OBJ_STRING), value)
    assert isinstance(value, Stream)
    return _stream_digest(mix_digest(digest, _OBJ_STREAM), value)


def digest_value(value: Value, volatile: bool = False) -> bytes:
    """DEBUG DIGEST-VALUE of one value (the key itself is not covered): 40 hex digits.
    `volatile`: the key has a time to live."""
    digest = _object_digest(_ZERO, value)
    return (xor_digest(digest, _VOLATILE) if volatile else digest).hex().encode()


def digest_keyspace(keyspace: Keyspace) -> bytes:
    """DEBUG DIGEST: 40 hex digits, all zero for an empty keyspace."""
    final = _ZERO
    for index, db in enumerate(keyspace.dbs):
        if not db:
            continue
        deadlines = keyspace.expires[index].deadlines
        final = mix_digest(final, struct.pack(">I", index))
        for key, value in db.items():
            digest = _object_digest(mix_digest(_ZERO, key), value)
            if key in deadlines:
                digest = xor_digest(digest, _VOLATILE)
            final = xor_digest(final, digest)
    return final.hex().encode()
