"""Idempotent production (Redis 8.6): XCFGSET, XIDMPRECORD, and the IDMP part of XADD that
`streams.xadd` hands over (parsing is in `stream_args`, the rules in node/engine/idmp.py, the
effects in node/engine/idmp_ops.py).

Error texts are Redis 8.6's where its tests pin them (tests/unit/type/stream.tcl); the texts
the sources leave open are Rill's and listed in docs/compatibility.md.
"""

from __future__ import annotations

from typing import Any, Final

from node.commands.args import NOT_AN_INTEGER, SYNTAX_ERROR, to_int
from node.commands.context import Session
from node.commands.reply import OK, CommandError
from node.commands.stream_args import engine_error, from_log, lookup_stream, parse_strict_id, propagate_all
from node.commands.table import command
from node.engine import idmp_ops
from node.engine.idmp import MAX_DURATION, MAX_MAXSIZE, MIN_DURATION, MIN_MAXSIZE
from node.engine.ids import format_id
from node.engine.stream_ops import AddTrimArgs, Effect, StreamError
from node.engine.stream_value import StreamValue

_NO_PARAMETER: Final = "ERR At least one parameter (IDMP-DURATION or IDMP-MAXSIZE) is required"


def new_stream_effects(ctx: Session, key: bytes, value: StreamValue) -> list[Effect]:
    """A client's command is creating the stream `value` at `key`: it takes the server's
    stream-idmp-duration / stream-idmp-maxsize. Returns what to log after the creating
    effect (nothing under the defaults, and nothing replaying the log: the primary's XCFGSET
    follows in it)."""
    if from_log(ctx):
        return []
    config = ctx.node.config
    return idmp_ops.new_stream_settings(value, key, config.stream_idmp_duration, config.stream_idmp_maxsize)


def xadd_idmp(ctx: Session, argv: list[bytes], args: AddTrimArgs, value: StreamValue, created: bool) -> bytes:
    """XADD with IDMP or IDMPAUTO on `value` (stored by the caller when `created`): logs the
    effects and returns the entry ID, the original one for a duplicate."""
    config = ctx.node.config
    settings = new_stream_effects(ctx, argv[1], value) if created else []
    try:
        entry_id, _, effect = idmp_ops.xadd_idmp(
            value, argv, args, ctx.now_ms(), config.stream_node_max_entries, config.stream_node_max_bytes,
            from_log(ctx),
        )
    except StreamError as exc:
        raise engine_error(exc) from None
    if settings:
        # The XADD created the stream (so it added): see idmp_ops, the XCFGSET must come
        # after that XADD and must not forget the iid the XADD records.
        propagate_all(ctx, [idmp_ops.without_idmp(effect), *settings, idmp_ops.record_effect(effect, entry_id)])
    else:
        ctx.propagate_argv(effect)
    return format_id(entry_id)


@command(
    "xcfgset", -2, "write fast", 1, 1, 1, group="stream",
    summary="Sets the IDMP configuration parameters for a stream.",
)  # fmt: skip
def xcfgset(ctx: Session, argv: list[bytes]) -> Any:
    if len(argv) == 2:
        raise CommandError(_NO_PARAMETER)
    duration = maxsize = -1  # not given
    i = 2
    while i < len(argv):
        opt = argv[i].lower()
        if i + 1 == len(argv) or opt not in (b"idmp-duration", b"idmp-maxsize"):
            raise CommandError(SYNTAX_ERROR)
        n = to_int(argv[i + 1])
        if n is None:
            raise CommandError(NOT_AN_INTEGER)
        if opt == b"idmp-duration":
            if not MIN_DURATION <= n <= MAX_DURATION:
                raise CommandError(f"ERR IDMP-DURATION must be between {MIN_DURATION} and {MAX_DURATION} seconds")
            duration = n
        else:
            if not MIN_MAXSIZE <= n <= MAX_MAXSIZE:
                raise CommandError(f"ERR IDMP-MAXSIZE must be between {MIN_MAXSIZE} and {MAX_MAXSIZE} entries")
            maxsize = n
        i += 2
    value = lookup_stream(ctx.db, argv[1])
    if value is None:
        raise CommandError("ERR no such key")
    propagate_all(ctx, idmp_ops.xcfgset(value, argv[1], duration, maxsize))
    return OK


@command(
    "xidmprecord", 5, "write denyoom fast", 1, 1, 1, group="stream",
    summary="An internal command that records an idempotent ID for an existing stream entry.",
)  # fmt: skip
def xidmprecord(ctx: Session, argv: list[bytes]) -> Any:
    _, key, pid, iid, raw_id = argv
    if not pid:
        raise CommandError("ERR IDMP requires a non-empty producer ID")
    if not iid:
        raise CommandError("ERR IDMP requires a non-empty idempotent ID")
    entry_id = parse_strict_id(raw_id)
    value = lookup_stream(ctx.db, key)
    if value is None:
        raise CommandError("ERR no such key")
    try:
        effects = idmp_ops.xidmprecord(value, argv, pid, iid, entry_id, ctx.now_ms(), from_log(ctx))
    except StreamError as exc:
        raise engine_error(exc) from None
    propagate_all(ctx, effects)
    return OK
