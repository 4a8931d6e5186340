"""The chaos lab on the compose cluster: `rill chaos run --target compose` against
deploy/compose.yaml with deploy/compose.chaos.yaml over it (every link of the cluster through
the chaos profile's toxiproxies), the same workload and checkers as the lab's own clusters.

- kill-primary: `docker kill` of the primary's container, `docker start` 10 s later; the
  sentinels fail over and the cluster settles with every node read.
- isolate-primary: the primary cut off at its own proxies from the replicas, the sentinels and
  client group c2, while client group c1 still reaches it. This cluster runs Rill's default
  mode, so the checkers must go red: the old primary acknowledges writes after the sentinels
  promoted a replica (G2) and those writes are lost when it rejoins.
- partition-primary: the minority partition needs a replica and a sentinel on the primary's
  side, which one proxy per node cannot give: the run says the fault was not applied, and
  nothing goes red (the control for the run above).

After each run the deployment is as before it: no toxic left on a proxy, every container
running and not paused, the run's stream deleted. The cluster uses the lab's timings
(down-after 2 s, failover-timeout 4 s, set with SENTINEL SET): a split vote is retried within
the fault, as in the lab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
import redis

from tests.deploy.project import NODES, ROOT, SENTINELS, Project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

RUN_S = 20  # the lab's shortest workload
RUN_TIMEOUT_S = 600.0  # set-up checks, the workload, settling (45 s at most), the drain (20 s), final reads


def _sentinel(project: Project, service: str) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=project.port(service, 26379), socket_timeout=10, decode_responses=True)


@pytest.fixture(scope="module")
def cluster(chaos_project: Project) -> Project:
    for service in SENTINELS:
        _sentinel(chaos_project, service).execute_command("SENTINEL", "SET", "rill", "down-after-milliseconds",
                                                           "2000", "failover-timeout", "4000")
    return chaos_project


def _lab(project: Project, scenario: str, out: str, seed: int = 1) -> tuple[dict[str, Any], str]:
    """`rill chaos run --target compose` as a user runs it: the docker CLI pointed at the
    project's engine, the password in RILL_PASSWORD."""
    env = {**project.engine.env, "RILL_PASSWORD": project.password}
    done = subprocess.run([sys.executable, "-m", "chaos", "run", "--target", "compose", "--compose-project",
                           project.name, "--scenario", scenario, "--seed", str(seed), "--duration", str(RUN_S),
                           "--out", out], env=env, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(os.path.join(out, "result.json"), encoding="utf-8") as f:
        return json.load(f), done.stderr


def _history(out: str) -> list[dict[str, Any]]:
    with open(os.path.join(out, "history.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _assert_harness(result: dict[str, Any], history: list[dict[str, Any]]) -> None:
    """The run worked as a lab run: settled, every node read, the consumers drained, all
    three kinds of producers acknowledged."""
    assert result["status"] == "done"
    assert result["settled_primary"] is not None, result["anomalies"]
    assert result["anomalies"]["not_settled"] == 0 and result["anomalies"]["unreachable_nodes"] == 0
    assert {e["node"] for e in history if e["type"] == "final" and e.get("entries") is not None} == {"n1", "n2", "n3"}
    assert result["groups"]["drained"]
    assert all(result["writes"]["by_mode"][mode]["ok"] > 0 for mode in ("nowait", "wait1", "waitmaj"))
    assert result["deployment"]["members"] == {"n1": "primary", "n2": "replica-1", "n3": "replica-2",
                                               "s1": "sentinel-1", "s2": "sentinel-2", "s3": "sentinel-3"}


def _assert_left_as_found(project: Project) -> None:
    for service in (*NODES, *SENTINELS, *(f"toxi-{n}" for n in NODES)):
        state = project.inspect(service)["State"]
        assert isinstance(state, dict) and state["Running"] and not state["Paused"], service
    for node in NODES:
        api = project.port(f"toxi-{node}", 8474)
        with urllib.request.urlopen(f"http://127.0.0.1:{api}/proxies", timeout=10) as reply:
            proxies = json.load(reply)
        assert all(p["enabled"] and not p["toxics"] for p in proxies.values()), proxies
    primary = next(n for n in NODES if project.client(n).execute_command("ROLE")[0] == "master")
    assert list(project.client(primary).scan_iter("rill-chaos-*")) == []


def _promotions(result: dict[str, Any]) -> list[str]:
    return [p["node"] for p in result["g2"]["promotions"]]


def test_the_lab_kills_the_primary_container(cluster: Project, tmp_path: Any) -> None:
    out = str(tmp_path / "kill-primary")
    result, _ = _lab(cluster, "kill-primary", out)
    history = _history(out)
    _assert_harness(result, history)
    assert result["faults_applied"] == 1 and result["not_applied"] == []
    first = next(e["first_primary"] for e in history if e["type"] == "meta" and e["f"] == "run")
    stop = next(e for e in history if e["type"] == "nemesis" and e["f"] == "stop")
    assert stop["detail"].startswith(f"SIGKILL {first}, restarted")
    assert [p for p in _promotions(result) if p != first], result["sentinels"]  # another node took over
    assert result["anomalies"]["g2"] == 0  # the killed primary acknowledged nothing more
    _assert_left_as_found(cluster)


def test_a_primary_cut_off_at_its_proxies_but_for_one_client_group_shows_g2(cluster: Project,
                                                                            tmp_path: Any) -> None:
    out = str(tmp_path / "isolate-primary")
    result, _ = _lab(cluster, "isolate-primary", out)
    history = _history(out)
    _assert_harness(result, history)
    assert result["faults_applied"] == 1 and result["not_applied"] == []
    start = next(e for e in history if e["type"] == "nemesis" and e["f"] == "start")
    stop = next(e for e in history if e["type"] == "nemesis" and e["f"] == "stop")
    victim = start["node"]
    label = result["deployment"]["members"][victim]
    assert stop["detail"].endswith(f"at the proxies {label}, {label}-replication, {label}-c2")
    promoted = [p for p in _promotions(result) if p != victim]
    assert promoted, result["sentinels"]  # the sentinels failed the cut-off primary over
    # Red, as default mode must be here: clients c1 kept writing to the old primary after the
    # promotion, and what it acknowledged then is gone.
    assert result["anomalies"]["g2"] > 0, result["g2"]
    assert set(result["g2"]["by_node"]) == {victim}
    assert result["anomalies"]["lost"] > 0
    assert not result["safe"] and "g2" in result["unsafe_because"]
    _assert_left_as_found(cluster)


def test_a_partition_the_proxies_cannot_make_is_reported_not_applied(cluster: Project, tmp_path: Any) -> None:
    out = str(tmp_path / "partition-primary")
    result, stderr = _lab(cluster, "partition-primary", out)
    _assert_harness(result, _history(out))
    assert result["faults_applied"] == 0
    [skipped] = result["not_applied"]
    assert skipped["fault"] == "partition" and "no proxy carries" in skipped["why"]
    assert f"not applied here: {skipped['name']}: {skipped['why']}" in stderr
    # Without the fault nothing failed over and nothing is red: what the run above showed was
    # the partition's doing.
    assert result["sentinels"]["switch_master"] == 0
    assert result["safe"] and result["anomalies"]["g2"] == 0 and result["anomalies"]["lost"] == 0
    _assert_left_as_found(cluster)
