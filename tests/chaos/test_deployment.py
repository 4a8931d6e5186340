"""The lab on a user's deployment (chaos/deployment.py), without docker: a real toxiproxy server
holding a deployment's proxies by the naming convention, a description naming nodes and
sentinels by address, and command templates. Which link faults its proxies can apply exactly
(one proxy carries many links), what is recorded as not applied and why, and that the nemesis
undoes what it did there. The whole lab against the compose cluster: tests/deploy/test_chaos_lab.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench.procs import free_port
from chaos.deployment import Deployment, DeploymentError, _located
from chaos.faults import Links, NotApplicable
from chaos.history import Recorder, read_history
from chaos.nemesis import Nemesis
from chaos.steps import Step
from chaos.topology import Link, toxiproxy_binary

NODES = ("primary", "replica-1", "replica-2")


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[tuple[str, int]]:
    """A toxiproxy server with deploy/conf's proxies for three nodes (their upstreams are never
    dialled here: only the API is used)."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="rill-deployment-test-")
    config = os.path.join(workdir, "proxies.json")
    proxies = [{"name": f"{node}{suffix}", "listen": f"127.0.0.1:{free_port()}", "upstream": "127.0.0.1:1"}
               for node in NODES for suffix in ("", "-replication", "-c1", "-c2")]
    with open(config, "w", encoding="utf-8") as f:
        json.dump(proxies, f)
    server = subprocess.Popen([toxiproxy_binary(), "-host", "127.0.0.1", "-port", str(port), "-config", config],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                Deployment(_description(("127.0.0.1", port)), "test")
                break
            except DeploymentError:
                assert time.monotonic() < deadline, "toxiproxy-server did not start"
                time.sleep(0.1)
        yield ("127.0.0.1", port)
    finally:
        server.kill()
        server.wait()


def _description(api: tuple[str, int], through_proxy: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": node, "address": f"127.0.0.1:{free_port()}", "announced": f"toxi-{node}:6379",
                   "toxiproxy": f"{api[0]}:{api[1]}", "through_proxy": through_proxy} for node in NODES],
        "sentinels": [{"name": f"sentinel-{k}", "address": f"127.0.0.1:{free_port()}"} for k in (1, 2, 3)],
        **extra,
    }


def _names(proxies: list[Any]) -> set[str]:
    return {p.name for p in proxies}


def test_a_primary_isolated_but_for_one_client_group_is_cut_at_its_own_proxies(toxiproxy: tuple[str, int]) -> None:
    deployment = Deployment(_description(toxiproxy), "test")
    links = Links(deployment)
    assert deployment.labels == {"n1": "primary", "n2": "replica-1", "n3": "replica-2", "s1": "sentinel-1",
                                 "s2": "sentinel-2", "s3": "sentinel-3"}
    others = [m for m in deployment.members if m not in ("n1", "c1")]
    isolate = links.between(["n1"], others)
    # The primary's own links to the replicas go through *their* proxies, which also carry the
    # sentinels' links: only because a primary replicates from nobody may they stay.
    assert _names(deployment.proxies(isolate, idle=("n1",))) == {"primary", "primary-replication", "primary-c2"}
    with pytest.raises(NotApplicable, match="one proxy \\(replica-1\\) carries primary>replica-1 and"):
        deployment.proxies(isolate)
    # A client group alone: its own proxy.
    assert _names(deployment.proxies([Link("c2", "n1")])) == {"primary-c2"}


@pytest.mark.parametrize(("side", "message"), [
    # the minority partition: a sentinel on the primary's side talks to the others directly
    (["n1", "n2", "s1", "c1"], "no proxy carries sentinel-1>sentinel-2"),
    # and a replica on its side would need a way in of its own
    (["n1", "n2"], "one proxy \\(.*\\) carries .* and .*: it cannot cut the one and keep the other"),
    # clients reach the sentinels directly
    (["c2"], "no proxy carries c2>sentinel-1"),
])
def test_cuts_the_proxies_cannot_separate_are_not_applicable(toxiproxy: tuple[str, int], side: list[str],
                                                              message: str) -> None:
    deployment = Deployment(_description(toxiproxy), "test")
    links = Links(deployment)
    cut = links.between(side, [m for m in deployment.members if m not in side])
    with pytest.raises(NotApplicable, match=message):
        deployment.proxies(cut, idle=("n1",))


def test_without_the_cluster_going_through_the_proxies_only_client_links_can_be_cut(
        toxiproxy: tuple[str, int]) -> None:
    deployment = Deployment(_description(toxiproxy, through_proxy=False), "test")
    with pytest.raises(NotApplicable, match="no proxy carries sentinel-1>primary"):
        deployment.proxies([Link("s1", "n1")])
    assert _names(deployment.proxies([Link("c1", "n2")])) == {"replica-1-c1"}
    # The clients reach each node at its proxy's listen address.
    assert deployment.routes_for("c1")["toxi-primary:6379"][0] == "127.0.0.1"


def test_faults_without_their_commands_or_beyond_a_deployment_say_why(toxiproxy: tuple[str, int]) -> None:
    deployment = Deployment(_description(toxiproxy, control={"kill": "true", "start": "true"}), "test")
    assert deployment.unsupported("kill", "n1") is None
    assert deployment.unsupported("pause", "n1") == "no pause/resume command for primary (n1)"
    assert "no clock control" in str(deployment.unsupported("clock-step", "s1"))
    assert "no disk control" in str(deployment.unsupported("power-loss", "n2"))
    assert "config" in str(deployment.unsupported("stale-sentinel", "s2"))


@pytest.mark.parametrize(("description", "message"), [
    ({"nodes": []}, "lists its nodes"),
    ({"nodes": [{"name": "a", "address": "nowhere"}], "sentinels": [{"address": "h:1"}]}, "expected host:port"),
    ({"nodes": [{"name": "a", "address": "h:1"}], "sentinels": [{"address": "h:2"}]}, "at least one replica"),
    ({"nodes": [{"name": "a", "address": "h:1"}, {"name": "a", "address": "h:2"}], "sentinels": [{"address": "h:3"}]},
     "two members are called 'a'"),
])
def test_a_bad_description_gets_a_clear_error(description: dict[str, Any], message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        Deployment(description, "test")


def test_command_templates_are_run_without_a_shell_and_locate_a_restarted_member(tmp_path: Any) -> None:
    log = os.path.join(str(tmp_path), "log")
    script = 'import sys; open(sys.argv[1], "a").write(" ".join(sys.argv[2:]) + "\\n")'
    write = f"{sys.executable} -c '{script}' {log}"
    description = {
        "nodes": [{"name": "a;rm -rf x", "address": "127.0.0.1:7001", "unit": "rill@a"},
                  {"name": "b", "address": "127.0.0.1:7002", "unit": "rill@b"}],
        "sentinels": [{"name": "s", "address": "127.0.0.1:7003"}],
        "control": {"kill": f"{write} kill {{unit}} {{name}}", "start": f"{write} start {{unit}} {{port}}",
                    "locate": "echo [::]:7777 0.0.0.0:7009"},
    }
    deployment = Deployment(description, "test")
    node = deployment.nodes["n1"]
    node.kill()
    assert not node.alive()
    node.start()
    with open(log, encoding="utf-8") as f:
        assert f.read().splitlines() == ["kill rill@a a;rm -rf x", "start rill@a 7001"]
    assert node.alive() and node.admin().connection_pool.connection_kwargs["port"] == 7009
    assert _located("127.0.0.1:32768\n[::]:32768\n", "x") == ("127.0.0.1", 32768)


def test_the_nemesis_applies_what_it_can_and_records_the_rest(toxiproxy: tuple[str, int], tmp_path: Any) -> None:
    """Isolating the primary (clients c1 keep it) puts timeouts on its own proxies and removes
    them at the end; a clock step and a minority partition are recorded as not applied, with
    why, and change nothing."""
    deployment = Deployment(_description(toxiproxy), "test")
    links = Links(deployment)
    history = os.path.join(str(tmp_path), "h.jsonl")
    rec = Recorder(history, time.monotonic())
    steps = [Step(0.0, 1.5, "isolate", "primary"), Step(0.0, 0.1, "clock-step", "s1", {"seconds": 1.0}),
             Step(0.0, 1.0, "partition", "primary", {"pick": 0.0})]
    nemesis = Nemesis(deployment, links, rec, steps)
    nemesis.start()
    time.sleep(0.8)
    during = _toxics(toxiproxy)
    nemesis.join(10.0)
    rec.close()
    assert not nemesis.errors
    assert {name for name, toxics in during.items() if toxics} == {"primary", "primary-replication", "primary-c2"}
    assert not any(_toxics(toxiproxy).values())  # healed
    events = [e for e in read_history(history) if e["type"] == "nemesis"]
    assert [e["f"] for e in events if e["fault"] == "isolate"] == ["start", "stop"]
    skipped = {e["fault"]: e["why"] for e in events if e["f"] == "not-applied"}
    assert skipped.keys() == {"clock-step", "partition"}
    assert "no clock control" in skipped["clock-step"]
    assert "carries" in skipped["partition"]


def _toxics(api: tuple[str, int]) -> dict[str, list[Any]]:
    import urllib.request

    with urllib.request.urlopen(f"http://{api[0]}:{api[1]}/proxies", timeout=10) as reply:
        return {name: p["toxics"] for name, p in json.load(reply).items()}
