"""Every stream method of redis-py against a real node, with the sync and the asyncio client,
in RESP2 and RESP3: the values the client library decodes are the ones a Redis 7.2 server
produces for the same script."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import redis.asyncio

from tests.conftest import Server


def by_key(reply: Any) -> dict[str, Any]:
    """XREAD/XREADGROUP replies as {key: entries}: RESP2 gives [[key, entries]], RESP3 a map
    whose values redis-py wraps in one more list."""
    if isinstance(reply, dict):
        return {k: v[0] for k, v in reply.items()}
    return {k: v for k, v in reply}


def without(keys: tuple[str, ...]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Drop time-dependent fields from a list of dicts before comparing."""
    return lambda rows: [{k: v for k, v in row.items() if k not in keys} for row in rows]


@dataclass
class Step:
    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expect: Any = None
    # Applied to the reply before comparing with `expect` (None: compare as is).
    view: Callable[[Any], Any] | None = None
    # A check of its own instead of an equality (gets the reply).
    check: Callable[[Any], None] | None = None


E1 = ("1-1", {"a": "1"})
E2 = ("1-2", {"b": "2", "c": "3"})
E3 = ("2-0", {"a": "4"})


def _assert_stream_info(info: dict[str, Any]) -> None:
    assert info["length"] == 3
    assert info["radix-tree-keys"] == 1 and info["radix-tree-nodes"] == 2
    assert info["last-generated-id"] == "2-0"
    assert info["max-deleted-entry-id"] == "1-0"
    assert info["entries-added"] == 4
    assert info["recorded-first-entry-id"] == "1-1"
    assert info["groups"] == 1
    assert info["first-entry"] == E1 and info["last-entry"] == E3


def _assert_full_info(info: dict[str, Any]) -> None:
    entries = info["entries"]
    # redis-py decodes FULL's entries into {id: fields}.
    assert info["length"] == 3 and entries == dict([E1, E2, E3])
    (group,) = info["groups"]
    assert group["name"] == "g" and group["last-delivered-id"] == "2-0"
    assert group["entries-read"] == 4 and group["lag"] == 0
    assert group["pel-count"] == 2
    assert [(p[0], p[1], p[3]) for p in group["pending"]] == [("1-1", "bob", 4), ("1-2", "bob", 7)]
    names = [c["name"] for c in group["consumers"]]
    assert names == ["alice", "bob"]
    now_ms = time.time() * 1000
    for c in group["consumers"]:
        assert abs(c["seen-time"] - now_ms) < 60_000
        assert c["active-time"] == -1 or abs(c["active-time"] - now_ms) < 60_000


def _assert_consumers(rows: list[dict[str, Any]]) -> None:
    assert [(r["name"], r["pending"]) for r in rows] == [("alice", 0), ("bob", 2)]
    for r in rows:
        assert 0 <= r["idle"] < 60_000
        assert r["inactive"] == -1 or 0 <= r["inactive"] < 60_000


SCRIPT: list[Step] = [
    Step("xadd", ("s", {"a": "1"}), {"id": "1-1"}, "1-1"),
    Step("xadd", ("s", {"b": "2", "c": "3"}), {"id": "1-2"}, "1-2"),
    Step("xadd", ("s", {"x": "0"}), {"id": "1-0"}),  # refused: below the top entry (see _refusal)
    Step("xadd", ("s", {"z": "9"}), {"id": "1-3"}, "1-3"),
    Step("xadd", ("nokey", {"a": "1"}), {"nomkstream": True}, None),
    Step("xlen", ("s",), {}, 3),
    Step("xrange", ("s",), {}, [E1, E2, ("1-3", {"z": "9"})]),
    Step("xrange", ("s", "(1-1", "+"), {"count": 1}, [E2]),
    Step("xrevrange", ("s",), {"count": 2}, [("1-3", {"z": "9"}), E2]),
    Step("xdel", ("s", "1-3", "9-9"), {}, 1),
    Step("xadd", ("s", {"a": "4"}), {"id": "2-0", "maxlen": 10, "approximate": False}, "2-0"),
    Step("xtrim", ("s",), {"maxlen": 10, "approximate": False}, 0),
    Step("xread", ({"s": "1-1"},), {"count": 1}, {"s": [E2]}, view=by_key),
    Step("xread", ({"s": "2-0", "nokey": "0"},), {}, None, view=lambda r: r or None),
    Step("xgroup_create", ("s", "g", "0"), {}, True),
    Step("xgroup_create", ("fresh", "g"), {"mkstream": True, "entries_read": 0}, True),
    Step("xgroup_createconsumer", ("s", "g", "alice"), {}, 1),
    Step("xreadgroup", ("g", "bob", {"s": ">"}), {"count": 2}, {"s": [E1, E2]}, view=by_key),
    Step("xreadgroup", ("g", "alice", {"s": ">"}), {"noack": True}, {"s": [E3]}, view=by_key),
    Step("xreadgroup", ("g", "bob", {"s": "0"}), {}, {"s": [E1, E2]}, view=by_key),
    Step("xpending", ("s", "g"), {}, {"pending": 2, "min": "1-1", "max": "1-2",
                                      "consumers": [{"name": "bob", "pending": 2}]}),  # fmt: skip
    Step("xpending_range", ("s", "g", "-", "+", 10), {},
         [{"message_id": "1-1", "consumer": "bob", "times_delivered": 2},
          {"message_id": "1-2", "consumer": "bob", "times_delivered": 2}],
         view=without(("time_since_delivered",))),  # fmt: skip
    Step("xpending_range", ("s", "g", "-", "+", 10), {"consumername": "alice"}, []),
    Step("xpending_range", ("s", "g", "-", "+", 10), {"idle": 3_600_000}, []),
    Step("xclaim", ("s", "g", "alice", 0, ["1-1"]), {}, [E1]),
    Step("xclaim", ("s", "g", "alice", 0, ["1-2"]), {"justid": True, "retrycount": 7}, ["1-2"]),
    Step("xclaim", ("s", "g", "alice", 3_600_000, ["1-1"]), {}, []),
    Step("xpending_range", ("s", "g", "-", "+", 10), {},
         [{"message_id": "1-1", "consumer": "alice", "times_delivered": 3},
          {"message_id": "1-2", "consumer": "alice", "times_delivered": 7}],
         view=without(("time_since_delivered",))),  # fmt: skip
    Step("xautoclaim", ("s", "g", "bob", 0), {"start_id": "0-0", "count": 1}, ["1-2", [E1], []]),
    Step("xautoclaim", ("s", "g", "bob", 0), {"start_id": "1-2", "justid": True}, ["1-2"]),
    Step("xdel", ("s", "1-0"), {}, 0),
    Step("xsetid_raw", (), {}, "OK"),
    Step("xinfo_stream", ("s",), {}, check=_assert_stream_info),
    Step("xinfo_stream", ("s",), {"full": True}, check=_assert_full_info),
    Step("xinfo_groups", ("s",), {},
         [{"name": "g", "consumers": 2, "pending": 2, "last-delivered-id": "2-0", "entries-read": 4, "lag": 0}]),
    Step("xinfo_consumers", ("s", "g"), {}, check=_assert_consumers),
    Step("xack", ("s", "g", "1-1", "1-2", "5-5"), {}, 2),
    Step("xgroup_setid", ("s", "g", "0"), {"entries_read": 0}, True),
    Step("xinfo_groups", ("s",), {}, [{"name": "g", "consumers": 2, "pending": 0, "last-delivered-id": "0-0",
                                       "entries-read": 0, "lag": 3}]),  # fmt: skip
    Step("xgroup_delconsumer", ("s", "g", "bob"), {}, 0),
    Step("xgroup_destroy", ("s", "g"), {}, 1),
    Step("xgroup_destroy", ("s", "g"), {}, 0),
    Step("xtrim", ("s",), {"minid": "2-0", "approximate": False}, 2),
    Step("xrange", ("s",), {}, [E3]),
]


def _prepare(step: Step) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    if step.method == "xsetid_raw":
        # redis-py has no XSETID method: it goes through execute_command. 1-0 was never
        # deleted, so MAXDELETEDID records it as the greatest deleted ID.
        return "execute_command", ("XSETID", "s", "2-0", "ENTRIESADDED", "4", "MAXDELETEDID", "1-0"), {}
    return step.method, step.args, step.kwargs


def _verify(step: Step, reply: Any) -> None:
    if step.check is not None:
        step.check(reply)
        return
    got = step.view(reply) if step.view is not None else reply
    assert got == step.expect, f"{step.method}{step.args} {step.kwargs}"


def _refusal(step: Step) -> bool:
    return step.method == "xadd" and step.args[1] == {"x": "0"}


@pytest.fixture
def flushed(rill_node: Server) -> Iterator[Server]:
    c = rill_node.client()
    c.flushall()
    c.close()
    yield rill_node


@pytest.mark.parametrize("protocol", [2, 3])
def test_sync_client_runs_every_stream_method(flushed: Server, protocol: int) -> None:
    client = redis.Redis(port=flushed.port, protocol=protocol, decode_responses=True)
    try:
        for step in SCRIPT:
            method, args, kwargs = _prepare(step)
            if _refusal(step):
                with pytest.raises(redis.ResponseError, match="equal or smaller than the target stream top item"):
                    getattr(client, method)(*args, **kwargs)
                continue
            _verify(step, getattr(client, method)(*args, **kwargs))
    finally:
        client.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_asyncio_client_runs_every_stream_method(flushed: Server, protocol: int) -> None:
    async def run() -> None:
        client = redis.asyncio.Redis(port=flushed.port, protocol=protocol, decode_responses=True)
        try:
            for step in SCRIPT:
                method, args, kwargs = _prepare(step)
                if _refusal(step):
                    with pytest.raises(redis.ResponseError, match="equal or smaller"):
                        await getattr(client, method)(*args, **kwargs)
                    continue
                _verify(step, await getattr(client, method)(*args, **kwargs))
        finally:
            await client.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("protocol", [2, 3])
def test_asyncio_blocked_xreadgroup_is_woken_by_another_client(flushed: Server, protocol: int) -> None:
    async def run() -> Any:
        reader = redis.asyncio.Redis(port=flushed.port, protocol=protocol, decode_responses=True)
        writer = redis.asyncio.Redis(port=flushed.port, protocol=protocol, decode_responses=True)
        try:
            await writer.xgroup_create("q", "workers", "$", mkstream=True)
            async def read() -> Any:
                return await reader.xreadgroup("workers", "w1", {"q": ">"}, block=5000)

            pending = asyncio.create_task(read())
            while (await writer.info("clients"))["blocked_clients"] != 1:
                assert not pending.done()
                await asyncio.sleep(0.01)
            await writer.xadd("q", {"job": "1"}, id="10-0")
            got = await asyncio.wait_for(pending, 5)
            assert await writer.xpending("q", "workers") == {
                "pending": 1, "min": "10-0", "max": "10-0", "consumers": [{"name": "w1", "pending": 1}]}
            return got
        finally:
            await reader.aclose()
            await writer.aclose()

    assert by_key(asyncio.run(run())) == {"q": [("10-0", {"job": "1"})]}


@pytest.mark.parametrize("protocol", [2, 3])
def test_sync_errors_surface_as_response_errors(flushed: Server, protocol: int) -> None:
    client = redis.Redis(port=flushed.port, protocol=protocol, decode_responses=True)
    try:
        client.set("str", "x")
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            client.xadd("str", {"a": "1"})
        with pytest.raises(redis.ResponseError, match="NOGROUP"):
            client.xreadgroup("g", "c", {"nostream": ">"})
        client.xgroup_create("s", "g", mkstream=True)
        with pytest.raises(redis.ResponseError, match="BUSYGROUP"):
            client.xgroup_create("s", "g")
        with pytest.raises(redis.ResponseError, match="Invalid stream ID"):
            client.xrange("s", "bad", "+")
    finally:
        client.close()
