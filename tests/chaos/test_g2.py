"""The G2 checker on hand-made histories: an old primary acknowledging after a newer
promotion is flagged, with safety.md's reply-in-flight slack and nothing else allowed."""

from __future__ import annotations

from typing import Any

from chaos.checker import check, pair_ops
from chaos.g2 import check_g2, promotions_of
from chaos.history import Event


def role(node: str, what: str, t: float) -> Event:
    return {"type": "monitor", "f": "role", "node": node, "role": what, "time": t}


def promoted_event(node: str, old: str, t: float) -> Event:
    return {"type": "monitor", "f": "+promoted-slave", "sentinel": "s2", "payload": f"slave {node} {node} @ rill {old}",
            "time": t}


def op(process: str, f: str, start: float, end: float, node: str, **fields: Any) -> list[Event]:
    invoke: Event = {"type": "invoke", "f": f, "process": process, "time": start}
    done: Event = {"type": "ok", "f": f, "process": process, "node": node, "time": end}
    for key in ("value", "mode", "wait", "id", "ids"):
        if key in fields:
            invoke[key] = fields.pop(key)
    done.update(fields)
    return [invoke, done]


def start_roles() -> list[Event]:
    return [role("n1", "master", 0.0), role("n2", "slave of n1", 0.0), role("n3", "slave of n1", 0.0)]


def g2(history: list[Event]) -> dict[str, Any]:
    history = sorted(history, key=lambda e: e["time"])
    return check_g2(pair_ops(history), history)


def test_a_write_sent_to_the_old_primary_after_the_promotion_is_a_violation() -> None:
    history = [*start_roles(), role("n2", "master", 5.0),
               *op("p1", "xadd", 4.0, 4.1, "n1", value="before", id="1-0"),
               *op("p1", "xadd", 6.0, 6.1, "n1", value="after", id="2-0"),
               *op("p2", "xadd", 6.2, 6.3, "n2", value="new", id="3-0")]
    result = g2(history)
    assert result["count"] == 1
    example = result["examples"][0]
    assert (example["value"], example["node"], example["promoted"]) == ("after", "n1", "n2")
    assert example["after_promotion_s"] == 1.0
    assert result["by_node"] == {"n1": 1}


def test_a_reply_in_flight_across_the_promotion_is_allowed() -> None:
    # sent before the promotion, answered after it: the old primary may have decided it first
    history = [*start_roles(), role("n2", "master", 5.0),
               *op("p1", "xadd", 4.9, 5.4, "n1", value="in-flight", id="1-0")]
    assert g2(history)["count"] == 0


def test_a_wait_is_judged_from_when_it_was_sent() -> None:
    # XADD answered before the promotion, WAIT sent after it and answered with a count
    history = [*start_roles(), role("n2", "master", 5.0),
               *op("p1", "xadd", 4.8, 5.6, "n1", value="w", id="1-0", mode="waitmaj", wait=2, acks=2, xadd_at=5.1)]
    result = g2(history)
    assert result["by_kind"] == {"wait": 1}
    # a WAIT refused (no lease) is not an acknowledgement
    history[-1] = {**history[-1], "acks": None, "wait_error": "NOREPLICAS no majority lease"}
    assert g2(history)["count"] == 0


def test_group_writes_and_waits_count() -> None:
    history = [*start_roles(), role("n2", "master", 5.0),
               *op("c1", "xreadgroup", 6.0, 6.1, "n1", entries=[["1-0", "a"]]),
               *op("c1", "xreadgroup", 6.2, 6.5, "n1", entries=[]),  # nothing delivered: nothing decided
               *op("c1", "xack", 6.6, 6.7, "n1", id="1-0", count=1),
               *op("c1", "xack", 6.8, 6.9, "n1", id="1-0", count=0),
               *op("c1", "wait", 7.0, 7.1, "n1", ids=["1-0"], wait=2, acks=2)]
    assert g2(history)["by_kind"] == {"wait": 1, "xack": 1, "xreadgroup": 1}


def test_the_new_primary_and_a_repromoted_old_one_are_not_violations() -> None:
    history = [*start_roles(), role("n2", "master", 5.0), role("n1", "slave of n2", 8.0),
               role("n2", "down", 10.0), role("n1", "master", 12.0),
               *op("p2", "xadd", 6.0, 6.1, "n2", value="new", id="1-0"),
               *op("p1", "xadd", 12.5, 12.6, "n1", value="n1-again", id="2-0"),
               # n1 answered before the monitor saw its promotion (a poll later): still n1's epoch
               *op("p1", "xadd", 11.8, 11.9, "n1", value="n1-early", id="3-0")]
    assert g2(history)["count"] == 0
    # ...but n2, demoted by a newer promotion, answering afterwards is one
    history += op("p2", "xadd", 13.0, 13.1, "n2", value="stale", id="4-0")
    result = g2(history)
    assert result["count"] == 1 and result["examples"][0]["value"] == "stale"


def test_a_restart_as_primary_is_not_a_promotion() -> None:
    # n1 killed and restarted from its config, which still says primary: same epoch, so a
    # later promotion of n2 makes n1's acknowledgements violations, n1's return does not
    # make n2's acknowledgements violations
    history = [*start_roles(), role("n1", "down", 3.0), role("n1", "master", 4.0), role("n2", "master", 5.0),
               *op("p2", "xadd", 6.0, 6.1, "n2", value="new", id="1-0"),
               *op("p1", "xadd", 6.0, 6.1, "n1", value="old", id="2-0")]
    assert [p.node for p in promotions_of(sorted(history, key=lambda e: e["time"]))] == ["n2"]
    result = g2(history)
    assert result["count"] == 1 and result["examples"][0]["node"] == "n1"


def test_promotions_seen_by_the_poll_and_the_sentinel_are_one() -> None:
    history = sorted([*start_roles(), promoted_event("n3", "n1", 5.2), role("n3", "master", 5.0),
                      promoted_event("n3", "n1", 7.5)], key=lambda e: e["time"])
    promotions = promotions_of(history)
    assert [(p.node, p.time) for p in promotions] == [("n3", 5.0)]
    # the sentinel's event alone (the poll missed the switch: the node was paused) counts
    only_event = [*start_roles(), promoted_event("n3", "n1", 5.2)]
    assert [(p.node, p.time) for p in promotions_of(only_event)] == [("n3", 5.2)]


def test_g2_makes_a_run_unsafe() -> None:
    history = sorted([*start_roles(), role("n2", "master", 5.0),
                      *op("p1", "xadd", 6.0, 6.1, "n1", value="after", id="1-0"),
                      {"type": "final", "node": "n2", "role": "master", "entries": [["1-0", "after"]], "time": 20.0}],
                     key=lambda e: e["time"])
    result = check(history)
    assert result["anomalies"]["g2"] == 1
    assert not result["safe"] and result["unsafe_because"] == ["g2"]
