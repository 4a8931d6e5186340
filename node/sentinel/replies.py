"""Sentinel's replies, built from the policy's state as the values the node's RESP encoder
sends (node.commands.reply): a dict is a RESP3 map and a flat RESP2 array, bytes a bulk string.

Field names, their order, which ones appear when, and the value types are Redis 7.2's
(sentinel.c addReplySentinelRedisInstance, sentinelCommand, sentinelInfoCommand,
sentinelRoleCommand): every field value of an instance is a bulk string, numbers included;
IS-MASTER-DOWN-BY-ADDR answers integers. `now` is the sentinel's clock, for the "… ms ago"
fields. IS-MASTER-DOWN-BY-ADDR's reply is what `Sentinel.is_master_down_by_addr` returns
([integer, bulk string, integer]). Instances are listed in the order the sentinel learned them (Redis's order is its
dict's, which varies from process to process).
"""

from __future__ import annotations

from typing import Any

from node.commands.reply import NULL_ARRAY, Raw, ReplyError
from node.sentinel.instance import (
    FAILOVER_IN_PROGRESS,
    FAILOVER_STATE_NAMES,
    MASTER,
    O_DOWN,
    S_DOWN,
    SENTINEL,
    SLAVE,
    Instance,
)
from node.sentinel.policy import Sentinel

Fields = dict[bytes, bytes]


def _b(value: object) -> bytes:
    return str(value).encode()


def instance(ri: Instance, now: int) -> Fields:
    """One master, replica or sentinel (SENTINEL MASTER, and each entry of the lists)."""
    link = ri.link
    out: list[tuple[str, object]] = [
        ("name", ri.name),
        ("ip", ri.addr.host),
        ("port", ri.addr.port),
        ("runid", ri.runid or ""),
        ("flags", ",".join(ri.flag_names())),
        ("link-pending-commands", link.pending_commands),
        ("link-refcount", link.refcount),
    ]
    if ri.flags & FAILOVER_IN_PROGRESS:
        out.append(("failover-state", FAILOVER_STATE_NAMES[ri.failover_state]))
    out += [
        ("last-ping-sent", now - link.act_ping_time if link.act_ping_time else 0),
        ("last-ok-ping-reply", now - link.last_avail_time),
        ("last-ping-reply", now - link.last_pong_time),
    ]
    if ri.flags & S_DOWN:
        out.append(("s-down-time", now - ri.s_down_since_time))
    if ri.flags & O_DOWN:
        out.append(("o-down-time", now - ri.o_down_since_time))
    out.append(("down-after-milliseconds", ri.down_after_period))
    if ri.flags & (MASTER | SLAVE):
        out += [
            ("info-refresh", now - ri.info_refresh if ri.info_refresh else 0),
            ("role-reported", "master" if ri.role_reported == MASTER else "slave"),
            ("role-reported-time", now - ri.role_reported_time),
        ]
    if ri.flags & MASTER:
        out += [
            ("config-epoch", ri.config_epoch),
            ("num-slaves", len(ri.slaves)),
            ("num-other-sentinels", len(ri.sentinels)),
            ("quorum", ri.quorum),
            ("failover-timeout", ri.failover_timeout),
            ("parallel-syncs", ri.parallel_syncs),
        ]
        if ri.notification_script:
            out.append(("notification-script", ri.notification_script))
        if ri.client_reconfig_script:
            out.append(("client-reconfig-script", ri.client_reconfig_script))
    if ri.flags & SLAVE:
        out += [
            ("master-link-down-time", ri.master_link_down_time),
            ("master-link-status", "ok" if ri.slave_master_link_up else "err"),
            ("master-host", ri.slave_master_host if ri.slave_master_host is not None else "?"),
            ("master-port", ri.slave_master_port),
            ("slave-priority", ri.slave_priority),
            ("slave-repl-offset", ri.slave_repl_offset),
            ("replica-announced", ri.replica_announced),
        ]
    if ri.flags & SENTINEL:
        out += [
            ("last-hello-message", now - ri.last_hello_time),
            ("voted-leader", ri.leader if ri.leader is not None else "?"),
            ("voted-leader-epoch", ri.leader_epoch),
        ]
    return {name.encode(): _b(value) for name, value in out}


def _listed(instances: dict[str, Instance], now: int) -> list[Fields]:
    """addReplyDictOfRedisInstances: replicas that asked not to be announced are left out."""
    return [instance(ri, now) for ri in instances.values() if not (ri.flags & SLAVE and not ri.replica_announced)]


def masters(s: Sentinel, now: int) -> list[Fields]:
    """SENTINEL MASTERS."""
    return _listed(s.masters, now)


def master(s: Sentinel, name: str, now: int) -> Fields:
    """SENTINEL MASTER <name> (SentinelError if unknown)."""
    return instance(s.get_master(name), now)


def replicas(s: Sentinel, name: str, now: int) -> list[Fields]:
    """SENTINEL REPLICAS|SLAVES <name>."""
    return _listed(s.get_master(name).slaves, now)


def sentinels(s: Sentinel, name: str, now: int) -> list[Fields]:
    """SENTINEL SENTINELS <name>."""
    return _listed(s.get_master(name).sentinels, now)


def get_master_addr_by_name(s: Sentinel, name: str) -> Any:
    """[ip, port] of the current master (the promoted replica's once it accepted its role),
    or a null array for an unknown name."""
    ri = s.masters.get(name)
    if ri is None:
        return NULL_ARRAY
    addr = ri.current_address()
    return [addr.host.encode(), _b(addr.port)]


def myid(s: Sentinel) -> bytes:
    return s.myid.encode()


def ckquorum(s: Sentinel, name: str) -> Any:
    """SENTINEL CKQUORUM: a status reply, or a -NOQUORUM error naming what is missing."""
    usable, quorum_ok, majority_ok = s.quorum_status(s.get_master(name))
    if quorum_ok and majority_ok:
        return Raw(b"+OK %d usable Sentinels. Quorum and failover authorization can be reached\r\n" % usable)
    text = f"NOQUORUM {usable} usable Sentinels. "
    if not quorum_ok:
        text += "Not enough available Sentinels to reach the specified quorum for this master"
    if not majority_ok:
        if not quorum_ok:
            text += ". "
        text += "Not enough available Sentinels to reach the majority and authorize a failover"
    return ReplyError(text)


def info_cache(s: Sentinel, names: list[str] | None, now: int) -> list[Any]:
    """SENTINEL INFO-CACHE [name …]: per master, [ms since, INFO] of the master and each
    replica. As in Redis, a replica's age is 0 whenever its master never answered INFO (Redis
    tests the master's refresh time there), and unknown names are skipped."""
    chosen = list(s.masters.values()) if not names else [s.masters[n] for n in dict.fromkeys(names) if n in s.masters]
    out: list[Any] = []
    for ri in chosen:
        entries = [[now - ri.info_refresh if ri.info_refresh else 0, _info(ri)]]
        for slave in ri.slaves.values():
            entries.append([now - slave.info_refresh if ri.info_refresh else 0, _info(slave)])
        out += [ri.name.encode(), entries]
    return out


def _info(ri: Instance) -> bytes | None:
    return ri.info.encode("latin-1") if ri.info is not None else None



def info_fields(s: Sentinel, now: int, scripts: tuple[int, int] = (0, 0)) -> list[tuple[str, object]]:
    """The fields of INFO's `# Sentinel` section, in Redis's order; `scripts` are the
    scripts running and queued (the runner's)."""
    fields: list[tuple[str, object]] = [
        ("sentinel_masters", len(s.masters)),
        ("sentinel_tilt", int(s.tilt)),
        ("sentinel_tilt_since_seconds", (now - s.tilt_start_time) // 1000 if s.tilt else -1),
        ("sentinel_running_scripts", scripts[0]),
        ("sentinel_scripts_queue_length", scripts[1]),
        ("sentinel_simulate_failure_flags", s.simfailure_flags),
    ]
    for i, ri in enumerate(s.masters.values()):
        status = "odown" if ri.flags & O_DOWN else "sdown" if ri.flags & S_DOWN else "ok"
        fields.append((
            f"master{i}",
            f"name={ri.name},status={status},address={ri.addr.host}:{ri.addr.port},"
            f"slaves={len(ri.slaves)},sentinels={len(ri.sentinels) + 1}",
        ))
    return fields


def info_section(s: Sentinel, now: int, scripts: tuple[int, int] = (0, 0)) -> str:
    """The `# Sentinel` section of INFO."""
    return "# Sentinel\r\n" + "".join(f"{name}:{value}\r\n" for name, value in info_fields(s, now, scripts))


def role(s: Sentinel) -> list[Any]:
    """ROLE: ["sentinel", [monitored master names]]."""
    return [b"sentinel", [name.encode() for name in s.masters]]


def debug(s: Sentinel) -> Fields:
    """SENTINEL DEBUG without arguments."""
    return {name.encode(): _b(value) for name, value in s.timings.debug_fields()}
