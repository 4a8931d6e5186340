"""Redis 8.2's reference-aware deletion: XDELEX and XACKDEL (the rules are in
`node.engine.stream_refs`; XADD's and XTRIM's KEEPREF | DELREF | ACKED option is parsed with
their other options in `stream_args.parse_add_or_trim`).

Order of checks, as Redis 8.2.3 answers: the key's type, then the options and the IDS block,
then a missing key (or group) answers -1 for every ID without looking at them, and only then
are the IDs parsed.
"""

from __future__ import annotations

from typing import Any

from node.commands.context import Session
from node.commands.stream_args import lookup_stream, parse_delete_options, parse_strict_id, propagate_all
from node.commands.table import command
from node.engine import stream_refs


@command(
    "xdelex", -5, "write fast", 1, 1, 1, group="stream",
    summary="Deletes one or multiple entries from the stream.",
)  # fmt: skip
def xdelex(ctx: Session, argv: list[bytes]) -> Any:
    value = lookup_stream(ctx.db, argv[1])
    policy, raw_ids = parse_delete_options(argv, 2)
    if value is None:
        return [stream_refs.NOT_FOUND] * len(raw_ids)
    ids = [parse_strict_id(raw) for raw in raw_ids]
    results, effects = stream_refs.xdelex(value, argv, ids, policy)
    propagate_all(ctx, effects)
    return results


@command(
    "xackdel", -6, "write fast", 1, 1, 1, group="stream",
    summary="Acknowledges and deletes one or multiple messages for a stream consumer group.",
)  # fmt: skip
def xackdel(ctx: Session, argv: list[bytes]) -> Any:
    value = lookup_stream(ctx.db, argv[1])
    policy, raw_ids = parse_delete_options(argv, 3)
    if value is None or value.group(argv[2]) is None:
        return [stream_refs.NOT_FOUND] * len(raw_ids)
    ids = [parse_strict_id(raw) for raw in raw_ids]
    results, effects = stream_refs.xackdel(value, argv, argv[2], ids, policy)
    propagate_all(ctx, effects)
    return results
