"""The hello message sentinels publish on `__sentinel__:hello` of every monitored node (and
send to each other with PUBLISH): who the sender is and which master it believes in.

    sentinel_ip,sentinel_port,sentinel_runid,current_epoch,master_name,master_ip,master_port,master_config_epoch
"""

from __future__ import annotations

from dataclasses import dataclass

from node.sentinel.ctext import atoi, strtoull


@dataclass(frozen=True, slots=True)
class Hello:
    ip: str
    port: int
    runid: str
    current_epoch: int
    master_name: str
    master_ip: str
    master_port: int
    master_config_epoch: int

    def payload(self) -> str:
        return (
            f"{self.ip},{self.port},{self.runid},{self.current_epoch},"
            f"{self.master_name},{self.master_ip},{self.master_port},{self.master_config_epoch}"
        )


def parse_hello(payload: str) -> Hello | None:
    """None unless the payload has exactly eight comma-separated tokens (Redis ignores it)."""
    tokens = payload.split(",")
    if len(tokens) != 8:
        return None
    return Hello(
        ip=tokens[0],
        port=atoi(tokens[1]),
        runid=tokens[2],
        current_epoch=strtoull(tokens[3]),
        master_name=tokens[4],
        master_ip=tokens[5],
        master_port=atoi(tokens[6]),
        master_config_epoch=strtoull(tokens[7]),
    )
