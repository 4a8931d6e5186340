"""What a sentinel reads from a monitored instance's INFO reply (sentinelRefreshInstanceInfo's
parsing half). Fields absent from the reply are None: the instance keeps what it knew, except
the link-down time, which Redis resets to 0 when it is not reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from node.sentinel.ctext import atoi, strtoull


@dataclass(slots=True)
class InfoReport:
    run_id: str | None = None
    role: str | None = None  # "master" or "slave"
    replicas: list[tuple[str, int]] = field(default_factory=list)  # a master's slaveN lines
    master_link_down_ms: int = 0
    # Replication fields, read only once "role:slave" was seen (as Redis does).
    master_host: str | None = None
    master_port: int | None = None
    master_link_up: bool | None = None
    slave_priority: int | None = None
    slave_repl_offset: int | None = None
    replica_announced: int | None = None
    # Fenced mode (Rill nodes, any role): the node's durable id, its settings, its fence
    # epoch, the epoch its log continues in, and (a primary) whether it leads that epoch.
    fenced_node_id: str | None = None
    fenced_replica_set_size: int | None = None
    fenced_lease_milliseconds: int | None = None
    fence_epoch: int | None = None
    epoch: int | None = None
    leads_epoch: bool | None = None


def _replica_address(line: str) -> tuple[str, int] | None:
    """`slave0:ip=…,port=…,…` (or the pre-2.8 `slave0:<ip>,<port>,<state>`)."""
    if "ip=" not in line:
        _, _, rest = line.partition(":")
        parts = rest.split(",")
        if len(parts) < 3:
            return None
        return parts[0], atoi(parts[1])
    ip = line[line.index("ip=") + 3 :].split(",", 1)[0]
    if "port=" not in line:
        return None
    port = line[line.index("port=") + 5 :].split(",", 1)[0]
    return ip, atoi(port)


def parse_info(text: str, *, is_master: bool) -> InfoReport:
    """Parse an INFO reply; replica lines count only for an instance we monitor as master."""
    report = InfoReport()
    role: str | None = None
    for line in text.split("\r\n"):
        if len(line) >= 47 and line.startswith("run_id:"):
            report.run_id = line[7:47]
        if is_master and len(line) >= 7 and line.startswith("slave") and line[5].isdigit():
            address = _replica_address(line)
            if address is not None:
                report.replicas.append(address)
        if len(line) >= 32 and line.startswith("master_link_down_since_seconds"):
            report.master_link_down_ms = atoi(line[31:]) * 1000
        if line.startswith("fenced_"):
            name, _, value = line.partition(":")
            if name == "fenced_node_id":
                report.fenced_node_id = value
            elif name == "fenced_replica_set_size":
                report.fenced_replica_set_size = atoi(value)
            elif name == "fenced_lease_milliseconds":
                report.fenced_lease_milliseconds = atoi(value)
        if line.startswith("fence_epoch:"):
            report.fence_epoch = atoi(line[12:])
        elif line.startswith("epoch:"):
            report.epoch = atoi(line[6:])
        elif line.startswith("leads_epoch:"):
            report.leads_epoch = line[12:] == "1"
        if line.startswith("role:master"):
            role = "master"
        elif line.startswith("role:slave"):
            role = "slave"
        if role == "slave":
            if line.startswith("master_host:"):
                report.master_host = line[12:]
            if line.startswith("master_port:"):
                report.master_port = atoi(line[12:])
            if line.startswith("master_link_status:"):
                report.master_link_up = line[19:].lower() == "up"
            if line.startswith("slave_priority:"):
                report.slave_priority = atoi(line[15:])
            if line.startswith("slave_repl_offset:"):
                report.slave_repl_offset = strtoull(line[18:])
            if line.startswith("replica_announced:"):
                report.replica_announced = atoi(line[18:])
    report.role = role
    return report
