"""XINFO: STREAM (plain and FULL), GROUPS, CONSUMERS and HELP, in Redis 7.2's reply shapes
(maps, which RESP2 sends as flat arrays), with Redis 8.6's IDMP fields in XINFO STREAM."""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import to_int
from node.commands.context import Session
from node.commands.reply import CommandError
from node.commands.stream_args import bytes_text, entries_reply, entry_reply, lookup_stream
from node.commands.table import container, subcommand
from node.engine.groups import INVALID_ENTRIES_READ, UNOWNED, ConsumerGroup
from node.engine.idmp_ops import idmp_info
from node.engine.ids import MAX_ID, format_id
from node.engine.stream_ops import group_lag
from node.engine.stream_value import StreamValue

container("xinfo", -2, group="stream", summary="A container for stream introspection commands.")

_XINFO_HELP: Final = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
]


def _stream(ctx: Session, key: bytes) -> StreamValue:
    value = lookup_stream(ctx.db, key)
    if value is None:
        raise CommandError("ERR no such key")
    return value


def _syntax_error(argv: list[bytes]) -> CommandError:
    return CommandError(
        "ERR unknown subcommand or wrong number of arguments for '%s'. Try XINFO HELP." % bytes_text(argv[1])[:128]
    )


def _entries_read(group: ConsumerGroup) -> int | None:
    return group.entries_read if group.entries_read != INVALID_ENTRIES_READ else None


def rax_node_count(keys: list[int]) -> int:
    """Nodes of the radix tree Redis builds over these 128-bit keys (big-endian bytes):
    XINFO STREAM's radix-tree-nodes.

    Redis's rax is path-compressed: below a branching byte, a run of bytes with a single
    child is one compressed node, a key ends in an empty leaf, and the root exists even
    when empty. Insertions split and deletions re-compress, so for a set of equal-length
    keys the shape depends only on the set: count it from the sorted keys."""
    if not keys:
        return 1

    def byte_at(k: int, pos: int) -> int:
        return (k >> (8 * (15 - pos))) & 0xFF

    def subtree(lo: int, hi: int, depth: int) -> int:
        # Nodes of the subtree holding keys[lo:hi], which share their first `depth` bytes,
        # rooted at a node that starts at byte `depth`.
        if hi - lo == 1:
            return 1 if depth == 16 else 2  # [compressed tail +] leaf
        x = keys[lo] ^ keys[hi - 1]
        common = (128 - x.bit_length()) // 8
        nodes = 1 if common > depth else 0  # the compressed run before the branch
        nodes += 1  # the branching node at byte `common`
        i = lo
        while i < hi:
            b = byte_at(keys[i], common)
            j = i + 1
            while j < hi and byte_at(keys[j], common) == b:
                j += 1
            nodes += subtree(i, j, common + 1)
            i = j
        return nodes

    return subtree(0, len(keys), 0)


def _stream_header(value: StreamValue, now_ms: int) -> dict[bytes, Any]:
    header: dict[bytes, Any] = {
        b"length": value.length,
        b"radix-tree-keys": value.node_count(),
        b"radix-tree-nodes": rax_node_count(value.node_master_ids()),
        b"last-generated-id": format_id(value.last_id),
        b"max-deleted-entry-id": format_id(value.max_deleted_id),
        b"entries-added": value.entries_added,
        b"recorded-first-entry-id": format_id(value.first_id()),
    }
    # Redis 8.6's idempotent-production fields, always present (docs/compatibility.md).
    header.update(idmp_info(value, now_ms))
    return header


def _first_or_none(value: StreamValue, rev: bool) -> Any:
    entries = value.range(0, MAX_ID, 1, rev)
    return entry_reply(*entries[0]) if entries else None


def _full_groups(value: StreamValue, count: int) -> list[dict[bytes, Any]]:
    out = []
    for name, group in value.sorted_groups():
        pel = group.pel
        pending: list[list[Any]] = []
        for entry_id, (delivered, deliveries, owner) in pel.items():
            if count and len(pending) >= count:
                break
            pending.append([format_id(entry_id), owner if owner is not UNOWNED else b"", delivered, deliveries])
        consumers = []
        for c in group.sorted_consumers():
            own: list[list[Any]] = []
            for entry_id in group.owned(c):
                if count and len(own) >= count:
                    break
                delivered, deliveries, _owner = pel[entry_id]
                own.append([format_id(entry_id), delivered, deliveries])
            consumers.append({
                b"name": c.name,
                b"seen-time": c.seen_time,
                b"active-time": c.active_time,
                b"pel-count": c.pending,
                b"pending": own,
            })  # fmt: skip
        out.append({
            b"name": name,
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": _entries_read(group),
            b"lag": group_lag(value, group),
            b"pel-count": len(pel),
            # Redis 8.8: the size of the NACK zone (XNACK).
            b"nacked-count": len(group.nacked),
            b"pending": pending,
            b"consumers": consumers,
        })  # fmt: skip
    return out


@subcommand("xinfo", "stream", -3, "readonly", 2, 2, 1, summary="Returns information about a stream.")
def xinfo_stream(ctx: Session, argv: list[bytes]) -> Any:
    value = _stream(ctx, argv[2])
    opts = argv[3:]
    if not opts:
        reply = _stream_header(value, ctx.now_ms())
        reply[b"groups"] = value.group_count()
        reply[b"first-entry"] = _first_or_none(value, False)
        reply[b"last-entry"] = _first_or_none(value, True)
        return reply
    count = 10  # FULL's default, so that a huge stream cannot stall the server
    if len(opts) not in (1, 3) or opts[0].lower() != b"full":
        raise _syntax_error(argv)
    if len(opts) == 3:
        if opts[1].lower() != b"count":
            raise _syntax_error(argv)
        parsed = to_int(opts[2])
        if parsed is None:
            raise CommandError("ERR value is not an integer or out of range")
        count = parsed if parsed >= 0 else 10
    reply = _stream_header(value, ctx.now_ms())
    reply[b"entries"] = entries_reply(value.range(0, MAX_ID, count))
    reply[b"groups"] = _full_groups(value, count)
    return reply


@subcommand("xinfo", "groups", 3, "readonly", 2, 2, 1, summary="Returns a list of the consumer groups of a stream.")
def xinfo_groups(ctx: Session, argv: list[bytes]) -> Any:
    value = _stream(ctx, argv[2])
    return [
        {
            b"name": name,
            b"consumers": len(group.consumers),
            b"pending": len(group.pel),
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": _entries_read(group),
            b"lag": group_lag(value, group),
        }
        for name, group in value.sorted_groups()
    ]


@subcommand("xinfo", "consumers", 4, "readonly", 2, 2, 1, summary="Returns a list of the consumers in a consumer group.")
def xinfo_consumers(ctx: Session, argv: list[bytes]) -> Any:
    value = _stream(ctx, argv[2])
    group = value.group(argv[3])
    if group is None:
        raise CommandError(
            f"NOGROUP No such consumer group '{bytes_text(argv[3])}' for key name '{bytes_text(argv[2])}'"
        )
    now = ctx.now_ms()
    return [
        {
            b"name": c.name,
            b"pending": c.pending,
            b"idle": max(now - c.seen_time, 0),
            b"inactive": now - c.active_time if c.active_time != -1 else -1,
        }
        for c in group.sorted_consumers()
    ]


@subcommand("xinfo", "help", 2, "loading stale", summary="Returns helpful text about the different subcommands.")
def xinfo_help(ctx: Session, argv: list[bytes]) -> Any:
    return list(_XINFO_HELP)
