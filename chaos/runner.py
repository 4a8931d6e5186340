"""One run: a scenario against a target, from set-up to verdict, bounded in time and always
cleaned up (processes, proxies, namespaces), whatever goes wrong.

The phases, in order: the lab's namespaces and toxiproxies; the cluster (n1 primary, the other
nodes its replicas, three sentinels), the stream and its consumer group; the monitor, the two
client groups' worker processes and the nemesis, for `duration` seconds; every fault healed and
every process running again; wait (bounded) until the sentinels agree on a primary that every
node follows in sync; the consumers drain the group; each node's whole stream read; the
histories merged and checked.

Output in `out`: history.jsonl (every event), result.json (the checker's verdict plus the run's
parameters and phase times), logs/ (each process's log).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import redis

from chaos.checker import check
from chaos.cluster import Cluster
from chaos.faults import Links
from chaos.history import Recorder, merge_files
from chaos.monitor import Monitor
from chaos.nemesis import Nemesis
from chaos.scenarios import SCENARIOS
from chaos.steps import CLIENT_GROUPS, SENTINELS
from chaos.targets import SENTINEL_PORT, TARGETS, availability, node_ports, settings_with
from chaos.topology import Lab, LabError, build_lab
from chaos.workload import DEFAULT_GROUP

KEY = "chaos"
SETTLE_TIMEOUT = 45.0  # after the faults: until one primary, every replica in sync
DRAIN_TIMEOUT = 20.0

Progress = Callable[[str, float], None]  # (phase, fraction of the run done)


class RunError(Exception):
    """The harness broke (not the cluster: anomalies are results, not errors)."""


def run(target_name: str, scenario_name: str, seed: int, duration: float, out: str,
        progress: Progress | None = None, overrides: dict[str, object] | None = None) -> dict[str, Any]:
    """Runs one scenario; returns (and writes to out/result.json) the result. `overrides`
    are a user's settings (`targets.OPTIONS`) over the scenario's."""
    if target_name not in TARGETS:
        raise RunError(f"unknown target {target_name!r} (targets: {', '.join(TARGETS)})")
    if scenario_name not in SCENARIOS:
        raise RunError(f"unknown scenario {scenario_name!r} (`rill chaos scenarios` lists them)")
    if duration < 20:
        raise RunError("duration must be at least 20 s (the faults start 4-6 s in and need time to heal)")
    target, scenario = TARGETS[target_name], SCENARIOS[scenario_name]
    try:
        settings = settings_with(scenario.settings, overrides or {})
    except ValueError as exc:
        raise RunError(str(exc)) from None
    os.makedirs(out, exist_ok=True)
    base = {"target": target.name, "target_title": target.title, "scenario": scenario.name,
            "description": scenario.description, "seed": seed, "duration": duration,
            "overrides": dict(overrides or {}), "settings": settings.__dict__}
    reason = availability(target)
    if reason:
        result = {**base, "status": "not available", "reason": reason}
        _write_json(os.path.join(out, "result.json"), result)
        return result
    report = progress or (lambda phase, done: None)
    steps = scenario.plan(random.Random(seed), duration)
    workdir = tempfile.mkdtemp(prefix="rillchaos-")
    lab = build_lab(settings.nodes, SENTINELS, CLIENT_GROUPS, node_ports(target), SENTINEL_PORT, workdir, seed)
    cluster = Cluster(lab, target, settings)
    links = Links(lab)
    workers: list[subprocess.Popen[bytes]] = []
    timings: dict[str, float] = {}
    started = time.monotonic()
    monitor: Monitor | None = None
    nemesis: Nemesis | None = None
    rec: Recorder | None = None
    try:
        report("setting up", 0.0)
        lab.create()  # also moves this process into the lab's hub namespace
        cluster.start()
        _create_group(cluster)
        timings["setup_s"] = round(time.monotonic() - started, 2)
        t0 = time.monotonic()
        steal_before = _cpu_ticks()
        rec = Recorder(os.path.join(workdir, "lab.jsonl"), t0)
        majority = settings.nodes // 2  # replicas beyond the primary that make a majority of nodes
        producers, consumers, readers = _roles(settings.nodes, majority)
        rec.record({"type": "meta", "f": "run", **base, "nodes": list(cluster.nodes),
                    "sentinels": list(cluster.sentinels), "majority_wait": majority,
                    "consumers": [c for group in consumers.values() for c in group],
                    "settings": settings.__dict__, "steps": [s.__dict__ for s in steps], "time": 0.0})
        monitor = Monitor(cluster, rec)
        monitor.start()
        drain_flag = os.path.join(workdir, "drain")
        deadline = duration + SETTLE_TIMEOUT + DRAIN_TIMEOUT
        for group in sorted(producers):
            workers.append(_start_worker(lab, cluster, workdir, group, t0, duration, drain_flag, deadline,
                                         producers[group], consumers[group], readers[group]))
        nemesis = Nemesis(cluster, links, rec, steps, monitor)
        nemesis.start()
        while (now := rec.now()) < duration:
            report("running", now / duration)
            _check_workers(workers)
            time.sleep(0.25)
        timings["steal"] = _steal_share(steal_before, _cpu_ticks())
        nemesis.join(10.0)
        nemesis.abort()
        nemesis.join(10.0)
        if nemesis.errors:
            raise RunError("the nemesis failed: " + "; ".join(nemesis.errors))
        report("healing", 1.0)
        settle_start = time.monotonic()
        primary = _heal_and_settle(cluster, links, rec)
        timings["settle_s"] = round(time.monotonic() - settle_start, 2)
        report("draining", 1.0)
        open(drain_flag, "w").close()
        for worker in workers:
            _wait_worker(worker, max(1.0, deadline - rec.now()) + 5.0)
        report("final reads", 1.0)
        _final_reads(cluster, rec)
    finally:
        if nemesis is not None:
            nemesis.abort()
        if monitor is not None:
            monitor.stop()
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        cluster.stop_all()
        lab.destroy()
        if rec is not None:
            rec.close()
        _keep_logs(workdir, out)
        histories = [os.path.join(workdir, name) for name in sorted(os.listdir(workdir)) if name.endswith(".jsonl")]
        events = merge_files(histories, os.path.join(out, "history.jsonl"))
        shutil.rmtree(workdir, ignore_errors=True)
    timings["total_s"] = round(time.monotonic() - started, 2)
    result = {**base, "status": "done", "settled_primary": primary, "timings": timings, **check(events)}
    _write_json(os.path.join(out, "result.json"), result)
    return result


def _heal_and_settle(cluster: Cluster, links: Links, rec: Recorder) -> str | None:
    """Ends every fault (toxics off, paused processes continued, dead ones restarted), then
    waits, bounded, until the sentinels agree on a primary that every node follows in sync.
    Returns that primary (None if the cluster did not settle in time: recorded, and the
    final reads go ahead; divergent nodes then show in the result)."""
    links.heal_all()
    for proc in cluster.processes():
        if proc.paused:
            proc.resume()
        if not proc.alive():
            proc.start()
    rec.record({"type": "meta", "f": "healed"})
    deadline = time.monotonic() + SETTLE_TIMEOUT
    primary = cluster.settled()
    while primary is None and time.monotonic() < deadline:
        time.sleep(0.25)
        primary = cluster.settled()
    rec.record({"type": "meta", "f": "settled" if primary else "not-settled", "primary": primary})
    return primary


def _roles(nodes: int, majority: int) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[str]],
                                               dict[str, list[dict[str, str]]]]:
    """Per client group: three producers (no WAIT, WAIT 1, WAIT majority), one consumer, and
    readers tailing the nodes (split between the groups)."""
    producers: dict[str, list[dict[str, Any]]] = {}
    consumers: dict[str, list[str]] = {}
    readers: dict[str, list[dict[str, str]]] = {}
    for g in range(1, CLIENT_GROUPS + 1):
        group = f"c{g}"
        producers[group] = [{"process": f"{group}-{mode}", "mode": mode, "wait": wait}
                            for mode, wait in (("nowait", 0), ("wait1", 1), ("waitmaj", majority))]
        consumers[group] = [f"{group}-consumer"]
        readers[group] = [{"process": f"{group}-reader-n{k}", "node": f"n{k}"}
                          for k in range(1, nodes + 1) if k % CLIENT_GROUPS == g % CLIENT_GROUPS]
    return producers, consumers, readers


def _create_group(cluster: Cluster) -> None:
    """The stream and its consumer group, on n1, replicated before the run starts."""
    client = cluster.nodes["n1"].admin(timeout=5.0)
    try:
        client.xgroup_create(KEY, DEFAULT_GROUP, id="$", mkstream=True)
        client.execute_command("WAIT", len(cluster.nodes) - 1, 5000)
    finally:
        client.close()


def _start_worker(lab: Lab, cluster: Cluster, workdir: str, group: str, t0: float, duration: float,
                  drain_flag: str, deadline: float, producers: list[dict[str, Any]], consumers: list[str],
                  readers: list[dict[str, str]]) -> subprocess.Popen[bytes]:
    spec = {
        "group": group, "out": os.path.join(workdir, f"{group}.jsonl"), "t0": t0, "stop_at": duration,
        "drain_flag": drain_flag, "deadline": deadline,
        "sentinels": [list(p.member.address) for p in cluster.sentinels.values()],
        "nodes": {name: list(p.member.address) for name, p in cluster.nodes.items()},
        "producers": producers, "consumers": consumers, "readers": readers, "key": KEY,
        "majority_wait": len(cluster.nodes) // 2,
    }
    path = os.path.join(workdir, f"{group}-spec.json")
    _write_json(path, spec)
    log = open(os.path.join(workdir, f"{group}-worker.log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen(lab.exec_argv(lab.members[group], [sys.executable, "-m", "chaos.workload", path]),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    log.close()
    return proc


def _check_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() not in (None, 0):
            raise RunError(f"a workload process exited with code {worker.returncode} (see logs/)")


def _wait_worker(worker: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        worker.wait(timeout)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
        raise RunError("a workload process did not finish its drain in time") from None
    if worker.returncode != 0:
        raise RunError(f"a workload process exited with code {worker.returncode} (see logs/)")


def _final_reads(cluster: Cluster, rec: Recorder) -> None:
    """Each node's role and whole stream, read at its real address (None if it cannot be read)."""
    for name, proc in cluster.nodes.items():
        event: dict[str, Any] = {"type": "final", "node": name, "role": None, "entries": None}
        client = proc.admin(timeout=10.0)
        try:
            event["role"] = str(client.execute_command("ROLE")[0])
            event["entries"] = [[i, (f or {}).get("v")] for i, f in client.xrange(KEY, "-", "+") or []]
            event["groups"] = [{k: str(v) for k, v in g.items()} for g in client.xinfo_groups(KEY)]
            # the whole PEL: (id, consumer, times delivered); idle times differ between nodes
            event["pending"] = [[str(p["message_id"]), str(p["consumer"]), int(p["times_delivered"])]
                                for p in client.xpending_range(KEY, DEFAULT_GROUP, "-", "+", 100000)]
        except (redis.RedisError, OSError) as exc:
            event["error"] = str(exc)
        finally:
            client.close()
        rec.record(event)


def _cpu_ticks() -> tuple[int, int]:
    """(steal, total) CPU ticks of the machine from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def _steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time the hypervisor gave to other guests during the
    workload: context for a run whose sentinels entered TILT."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 4) if total > 0 else 0.0


def _keep_logs(workdir: str, out: str) -> None:
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    for root, _dirs, files in os.walk(workdir):
        for name in files:
            if name.endswith((".log", ".conf")):
                rel = os.path.relpath(os.path.join(root, name), workdir).replace(os.sep, "-")
                shutil.copyfile(os.path.join(root, name), os.path.join(logs, rel))


def _write_json(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=False, default=str)
        f.write("\n")


__all__ = ["RunError", "run", "LabError"]
