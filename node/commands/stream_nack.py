"""XNACK (Redis 8.8): hand pending entries back to their consumer group without acknowledging
them. The rules are in `node.engine.nack_ops`.

`XNACK key group SILENT|FAIL|FATAL [options] IDS numids id ... [options]`, options
`RETRYCOUNT n` and `FORCE`, before or after the IDS block. The parser's errors are Redis
8.8's (tests/unit/type/stream-cgroups.tcl "XNACK argument and error validation"): a mode
word first, then any order; an unknown word (a second mode or a surplus ID among them) is
`Unrecognized XNACK option`. Arguments are checked before the key and group are looked up.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, to_int
from node.commands.context import Session
from node.commands.reply import CommandError
from node.commands.stream_args import (
    IdsBlockTexts,
    bytes_text,
    lookup_stream,
    parse_ids_block,
    parse_strict_id,
    propagate_all,
)
from node.commands.stream_dead_letters import mover as dead_letter_mover
from node.commands.table import command
from node.engine import nack_ops

_NACK_IDS: Final = IdsBlockTexts("ERR numids must be a positive integer", "ERR number of IDs doesn't match numids")


@command(
    "xnack", -7, "write fast", 1, 1, 1, group="stream",
    summary="Releases pending messages back to the group's PEL without acknowledging them, making them "
            "available for re-delivery.",
)  # fmt: skip
def xnack(ctx: Session, argv: list[bytes]) -> Any:
    mode = nack_ops.MODE_NAMES.get(argv[3].lower())
    if mode is None:
        raise CommandError("ERR mode must be SILENT, FAIL, or FATAL")
    raw_ids: list[bytes] | None = None
    retry_count = -1
    force = False
    i = 4
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"ids":
            raw_ids, i = parse_ids_block(argv, i, _NACK_IDS)
            continue
        if opt == b"force":
            force = True
        elif opt == b"retrycount" and i + 1 < len(argv):
            i += 1
            parsed = to_int(argv[i])
            if parsed is None:
                raise CommandError(NOT_AN_INTEGER)
            if parsed < 0:
                raise CommandError("ERR Invalid RETRYCOUNT value, must be >= 0")
            retry_count = parsed
        else:
            raise CommandError(f"ERR Unrecognized XNACK option '{bytes_text(argv[i])}'")
        i += 1
    if raw_ids is None:
        raise CommandError("ERR syntax error, expected IDS keyword")
    ids = [parse_strict_id(raw) for raw in raw_ids]
    value = lookup_stream(ctx.db, argv[1])
    group = value.group(argv[2]) if value is not None else None
    if value is None or group is None:
        raise CommandError(f"NOGROUP No such key '{bytes_text(argv[1])}' or consumer group '{bytes_text(argv[2])}'")
    mover = dead_letter_mover(ctx, argv[1], argv[2], value, group)
    n, effects = nack_ops.xnack(value, argv[1], argv[2], group, ids, mode, retry_count, force, mover)
    propagate_all(ctx, effects)
    return n
