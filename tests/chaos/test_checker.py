"""The checkers on small hand-made histories, one anomaly each (and a clean history that has
none): each test builds the history a faulty cluster would leave and pins what is reported."""

from __future__ import annotations

import json

import pytest

from chaos.checker import check, pair_ops
from chaos.history import Event, HistoryError, parse_lines

T = 0.0


def tick() -> float:
    global T
    T += 0.1
    return round(T, 3)


@pytest.fixture(autouse=True)
def _reset_clock() -> None:
    global T
    T = 0.0


def xadd(process: str, value: str, outcome: str, entry_id: str | None = None, *, mode: str = "nowait",
         wait: int = 0, acks: int = 0, node: str = "n1") -> list[Event]:
    invoke: Event = {"type": "invoke", "f": "xadd", "process": process, "key": "s", "value": value,
                     "mode": mode, "wait": wait, "time": tick()}
    done: Event = {"type": outcome, "f": "xadd", "process": process, "key": "s", "value": value, "time": tick()}
    if outcome == "ok":
        done.update(id=entry_id, node=node, acks=acks)
    else:
        done["error"] = "timeout" if outcome == "info" else "READONLY"
    return [invoke, done]


def read(process: str, f: str, entries: list[tuple[str, str]], node: str = "n2") -> list[Event]:
    return [{"type": "invoke", "f": f, "process": process, "time": tick()},
            {"type": "ok", "f": f, "process": process, "node": node, "time": tick(),
             "entries": [list(e) for e in entries]}]


def xack(process: str, entry_id: str, count: int = 1) -> list[Event]:
    return [{"type": "invoke", "f": "xack", "process": process, "id": entry_id, "time": tick()},
            {"type": "ok", "f": "xack", "process": process, "id": entry_id, "count": count, "time": tick()}]


def final(node: str, entries: list[tuple[str, str]] | None, role: str = "slave") -> Event:
    return {"type": "final", "node": node, "role": role, "time": tick(),
            "entries": None if entries is None else [list(e) for e in entries]}


def nemesis(f: str, name: str) -> Event:
    return {"type": "nemesis", "f": f, "name": name, "time": tick()}


STATE = [("1-0", "a"), ("2-0", "b")]


def clean_history() -> list[Event]:
    return [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0"),
            final("n1", STATE, "master"), final("n2", STATE), final("n3", STATE)]


def test_a_clean_history_is_valid() -> None:
    result = check(clean_history())
    assert result["valid"], result["anomalies"]
    assert result["writes"]["ok"] == 2
    assert result["reference"]["node"] == "n1"


def test_lost_writes_are_counted_by_acknowledgement_level() -> None:
    history = [
        *xadd("p0", "a", "ok", "1-0"),
        *xadd("p0", "plain", "ok", "2-0"),
        *xadd("p1", "w1", "ok", "3-0", mode="wait1", wait=1, acks=1),
        *xadd("p2", "wm", "ok", "4-0", mode="waitmaj", wait=2, acks=2),
        # WAIT timed out with fewer replicas: acknowledged, not WAIT-acknowledged
        *xadd("p2", "wm-short", "ok", "5-0", mode="waitmaj", wait=2, acks=1),
        # XADD acknowledged, then WAIT itself failed (connection lost): not WAIT-acknowledged
        *xadd("p2", "wm-unknown", "ok", "6-0", mode="waitmaj", wait=2, acks=None),  # type: ignore[arg-type]
        final("n2", [("1-0", "a")], "master"),
    ]
    result = check(history)
    lost = result["writes"]["lost"]
    assert (lost["acked"], lost["wait_acked"], lost["wait_majority_acked"]) == (5, 2, 1)
    assert lost["values"] == ["plain", "w1", "wm", "wm-short", "wm-unknown"]
    assert result["writes"]["by_mode"]["waitmaj"] == {"attempted": 3, "ok": 3, "fail": 0, "info": 0,
                                                      "wait_met": 1, "lost": 3}
    assert not result["valid"]


def test_a_timeout_is_indeterminate_never_lost_nor_failed() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "gone", "info"), *xadd("p1", "made-it", "info"),
               final("n1", [("1-0", "a"), ("2-0", "made-it")], "master")]
    result = check(history)
    assert result["writes"]["lost"]["acked"] == 0
    assert result["writes"]["recovered"] == 1
    assert result["writes"]["failed_but_present"]["count"] == 0
    assert result["valid"]


def test_an_invocation_without_completion_is_indeterminate() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), {"type": "invoke", "f": "xadd", "process": "p0", "value": "b",
                                               "mode": "nowait", "wait": 0, "time": tick()},
               final("n1", [("1-0", "a")], "master")]
    ops = pair_ops(history)
    assert [op.outcome for op in ops] == ["ok", "info"]
    assert check(history)["valid"]


def test_a_failed_write_must_not_appear() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "refused", "fail"),
               final("n1", [("1-0", "a")], "master"), final("n2", [("1-0", "a"), ("2-0", "refused")])]
    result = check(history)
    assert result["writes"]["failed_but_present"] == {"count": 1, "values": ["refused"]}
    assert result["anomalies"]["failed_but_present"] == 1


def test_duplicates_in_a_final_state() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), final("n1", [("1-0", "a"), ("2-0", "a")], "master")]
    result = check(history)
    assert result["values"]["duplicated"] == {"count": 1, "values": ["n1:a"]}
    assert result["values"]["value_moved"]["count"] == 1  # "a" acknowledged as 1-0, also at 2-0


def test_values_never_written() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *read("r-n2", "xread", [("1-0", "a"), ("9-0", "ghost")]),
               final("n1", [("1-0", "a")], "master")]
    result = check(history)
    assert result["values"]["unexpected"] == {"count": 1, "values": ["ghost"]}


def test_one_id_holding_two_values() -> None:
    # The old primary acknowledged "a" as 5-0; the new primary gave 5-0 to "b".
    history = [*xadd("p0", "a", "ok", "5-0", node="n1"), *xadd("p1", "b", "ok", "5-0", node="n2"),
               final("n2", [("5-0", "b")], "master")]
    result = check(history)
    assert result["values"]["id_conflicts"] == {"count": 1, "examples": [{"id": "5-0", "values": ["a", "b"]}]}
    assert result["writes"]["lost"]["values"] == ["a"]


def test_ids_out_of_order_in_a_final_state_a_reader_and_a_producer() -> None:
    history = [
        *xadd("p0", "a", "ok", "7-0", node="n1"),
        *xadd("p0", "b", "ok", "3-0", node="n2"),  # acknowledged after "a" with a smaller ID
        *read("r-n3", "xread", [("3-0", "b")]), *read("r-n3", "xread", [("3-0", "b")]),
        final("n2", [("3-0", "b"), ("2-0", "x")], "master"),
    ]
    result = check(history)
    assert result["order"]["by_kind"] == {"final": 1, "reader": 1, "producer": 1}


def test_replica_reads_of_entries_that_vanished_everywhere() -> None:
    history = [{"type": "monitor", "f": "role", "node": "n2", "role": "slave of n1", "time": 0.0},
               *xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0"),
               *read("r-n2", "xread", [("1-0", "a"), ("2-0", "b")], node="n2"),
               *read("r-n1", "xread", [("2-0", "b")], node="n1"),
               final("n2", [("1-0", "a")], "master"), final("n3", [("1-0", "a")])]
    result = check(history)
    assert result["vanished_reads"] == {"count": 1, "read_on_a_replica": 1, "by_node": {"n1": 1, "n2": 1},
                                        "values": ["b"]}
    # a read that survives on any one node has not vanished
    history[-1] = final("n3", [("1-0", "a"), ("2-0", "b")])
    assert check(history)["vanished_reads"]["count"] == 0


def test_an_acknowledged_entry_delivered_again() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *read("c0", "xreadgroup", [("1-0", "a")], node="n1"),
               *xack("c0", "1-0"), nemesis("start", "kill n1"),
               *read("c1", "xautoclaim", [("1-0", "a")], node="n2"), nemesis("stop", "kill n1"),
               {"type": "meta", "f": "drained", "time": tick()}, final("n2", [("1-0", "a")], "master")]
    result = check(history)
    assert result["groups"]["redelivered_after_ack"] == {"count": 1, "values": ["1-0:a"]}
    # redelivery of an entry that was never acknowledged is at-least-once, not an anomaly
    history[5]["count"] = 0
    assert check(history)["groups"]["redelivered_after_ack"]["count"] == 0


def test_a_durable_entry_never_delivered_counts_only_after_the_drain() -> None:
    history = [*xadd("p0", "a", "ok", "1-0", mode="waitmaj", wait=2, acks=2),
               *xadd("p0", "b", "ok", "2-0", mode="waitmaj", wait=2, acks=2),
               *read("c0", "xreadgroup", [("1-0", "a")], node="n1"),
               final("n1", STATE, "master")]
    undrained = check(history)
    assert undrained["groups"]["durable_never_delivered"]["values"] == ["b"]
    assert undrained["anomalies"]["durable_never_delivered"] == 0
    drained = check([*history, {"type": "meta", "f": "drained", "process": "c0", "time": tick()}])
    assert drained["anomalies"]["durable_never_delivered"] == 1
    # with two consumers named in the run's meta event, one drain is not enough
    run: Event = {"type": "meta", "f": "run", "consumers": ["c0", "c1"], "time": 0.0}
    half = check([run, *history, {"type": "meta", "f": "drained", "process": "c0", "time": tick()}])
    assert not half["groups"]["drained"]


def test_divergent_and_unreachable_nodes() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0"),
               final("n1", STATE, "master"), final("n2", [("1-0", "a"), ("3-0", "c")]), final("n3", None)]
    result = check(history)
    assert result["nodes"] == {"divergent": {"n2": {"missing": 1, "extra": 1}}, "unreachable": ["n3"]}


def test_two_primaries_at_the_end_use_the_fullest_node_as_reference() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0"),
               final("n1", STATE, "master"), final("n2", [("1-0", "a")], "master")]
    result = check(history)
    assert result["reference"] == {"node": "n1", "why": "2 primaries: the readable node with the most entries"}


def test_loss_windows_and_failover_time_per_fault() -> None:
    history: list[Event] = [*xadd("p0", "a", "ok", "1-0", node="n1")]   # t 0.1-0.2
    history.append(nemesis("start", "partition n1"))                       # t 0.3
    history.append({"type": "monitor", "f": "role", "node": "n2", "role": "master", "time": 0.55})
    history += xadd("p0", "b", "ok", "2-0", node="n1")                   # t 0.4-0.5, lost
    history += xadd("p0", "c", "ok", "3-0", node="n1")                   # t 0.6-0.7, lost
    history += xadd("p0", "d", "info")                                   # t 0.8-0.9
    history += xadd("p0", "e", "ok", "4-0", node="n2")                   # t 1.0-1.1: new primary
    history.append(nemesis("stop", "partition n1"))                        # t 1.2
    history.append(final("n2", [("1-0", "a"), ("4-0", "e")], "master"))
    result = check(history)
    assert result["loss_windows"] == [{"fault": "partition n1", "lost": 2, "from_s": 0.1, "to_s": 0.4}]
    fault = result["faults"][0]
    assert fault["primary_before"] == "n1"
    assert fault["new_primary"] == "n2"
    assert fault["promoted_s"] == pytest.approx(0.25)  # n2 became primary
    assert fault["failover_s"] == pytest.approx(0.8)  # the first write it acknowledged
    assert fault["first_ok_after_s"] == pytest.approx(0.2)


def test_unavailability_counts_whole_seconds_without_an_acknowledged_write() -> None:
    history: list[Event] = []
    for i, (start, outcome) in enumerate([(0.0, "ok"), (1.2, "info"), (2.5, "fail"), (3.4, "ok")]):
        ev = xadd("p0", f"v{i}", outcome, f"{i + 1}-0")
        ev[0]["time"], ev[1]["time"] = start, start + 0.05
        history += ev
    history.append(final("n1", [("1-0", "v0"), ("4-0", "v3")], "master"))
    unavailable = check(history)["unavailability"]
    assert unavailable["seconds_without_ok_write"] == 2  # seconds 1 and 2
    assert unavailable["longest_gap_s"] == pytest.approx(3.4)


def test_history_lines_with_errors_name_the_line() -> None:
    good = json.dumps({"type": "meta", "f": "start", "time": 0})
    with pytest.raises(HistoryError, match="h:2: not an event"):
        list(parse_lines([good, json.dumps({"f": "x"}), good], "h"))
    with pytest.raises(HistoryError, match="h:1: not JSON"):
        list(parse_lines(["{oops", good], "h"))
    # a torn last line (a worker killed mid-write) is dropped, the rest kept
    assert len(list(parse_lines([good, '{"type": "ok", "ti'], "h"))) == 1


def test_sentinel_events_that_explain_a_run_are_counted() -> None:
    history = [*clean_history(),
               {"type": "monitor", "f": "+tilt", "sentinel": "s1", "payload": "#tilt mode entered", "time": 2.5},
               {"type": "monitor", "f": "-failover-abort-not-elected", "sentinel": "s2", "time": 9.0},
               {"type": "monitor", "f": "+switch-master", "sentinel": "s3", "payload": "rill n1 n2", "time": 9.5}]
    assert check(history)["sentinels"] == {"switch_master": 1, "elections_split": 1, "tilt": [2.5]}


def test_lost_means_absent_from_every_node() -> None:
    # the final primary lacks "b" but a replica holds it: not lost, and the run is unsafe for
    # its final reads disagreeing
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0", mode="waitmaj", wait=2, acks=2),
               final("n1", [("1-0", "a")], "master"), final("n2", STATE)]
    result = check(history)
    assert result["writes"]["lost"]["acked"] == 0
    assert result["writes"]["missing_from_reference"] == 1
    assert result["unsafe_because"] == ["divergent_nodes"]
    history[-1] = final("n2", [("1-0", "a")])
    result = check(history)
    assert result["writes"]["lost"]["wait_majority_acked"] == 1
    assert result["unsafe_because"] == ["lost_wait_majority"]


def test_a_run_that_never_settled_is_unsafe() -> None:
    history = [*clean_history(), {"type": "meta", "f": "not-settled", "primary": None, "time": tick()}]
    result = check(history)
    assert result["anomalies"]["not_settled"] == 1
    assert not result["safe"] and not result["valid"]
    assert check(clean_history())["safe"]


def wait_after_acks(process: str, ids: list[str], acks: int, wait: int = 2) -> list[Event]:
    return [{"type": "invoke", "f": "wait", "process": process, "ids": ids, "wait": wait, "time": tick()},
            {"type": "ok", "f": "wait", "process": process, "ids": ids, "wait": wait, "acks": acks, "node": "n1",
             "time": tick()}]


def test_an_entry_delivered_again_after_a_durable_xack() -> None:
    history = [*xadd("p0", "a", "ok", "1-0"), *xadd("p0", "b", "ok", "2-0"),
               *read("c0", "xreadgroup", [("1-0", "a"), ("2-0", "b")], node="n1"),
               *xack("c0", "1-0"), *xack("c0", "2-0"), *wait_after_acks("c0", ["1-0"], acks=2),
               *wait_after_acks("c0", ["2-0"], acks=1),  # WAIT short of the majority: not durable
               *read("c1", "xautoclaim", [("1-0", "a"), ("2-0", "b")], node="n2"),
               final("n2", STATE, "master")]
    result = check(history)
    groups = result["groups"]
    assert groups["redelivered_after_ack"]["count"] == 2
    assert groups["redelivered_after_durable_ack"] == {"count": 1, "values": ["1-0:a"]}
    assert "redelivered_after_durable_ack" in result["unsafe_because"]


def test_group_state_that_differs_between_nodes_after_healing() -> None:
    group = [{"name": "g", "last-delivered-id": "2-0", "entries-read": "2"}]
    history = [*clean_history()[:4],
               {**final("n1", STATE, "master"), "groups": group, "pending": [["2-0", "c0", 1]]},
               {**final("n2", STATE), "groups": group, "pending": []},
               {**final("n3", STATE), "groups": [{**group[0], "last-delivered-id": "1-0"}],
                "pending": [["2-0", "c0", 1]]}]
    result = check(history)
    assert result["groups"]["divergent_group_state"] == {
        "n2": {"group_state_differs": 0, "pel_missing": 1, "pel_extra": 0},
        "n3": {"group_state_differs": 1, "pel_missing": 0, "pel_extra": 0}}
    assert result["unsafe_because"] == ["divergent_group_state"]
    assert result["groups"]["pending_at_end"] == 1


def test_one_id_naming_two_entries_is_not_a_redelivery() -> None:
    # After a failover the new primary reissued ID 5-0 for another entry: a consumer acknowledged
    # 5-0 ("a") durably on the old primary, another is delivered 5-0 ("b") on the new one.
    history = [*read("c0", "xreadgroup", [("5-0", "a")], node="n1"), *xack("c0", "5-0"),
               *wait_after_acks("c0", ["5-0"], acks=2),
               *read("c1", "xreadgroup", [("5-0", "b")], node="n2"),
               final("n2", [("5-0", "b")], "master")]
    groups = check(history)["groups"]
    assert groups["redelivered_after_ack"]["count"] == 0
    assert groups["redelivered_after_durable_ack"]["count"] == 0
    # the same entry again is one
    history += read("c1", "xautoclaim", [("5-0", "a")], node="n1")
    assert check(history)["groups"]["redelivered_after_durable_ack"]["values"] == ["5-0:a"]
