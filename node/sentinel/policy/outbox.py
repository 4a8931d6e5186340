"""The actions the policy hands back to the shell (`messages.Action`), in the order they were
decided: events and log lines, scripts, configuration rewrites, a simulated crash, and the
connection and command actions of `connections.Connections`."""

from __future__ import annotations

from node.sentinel.instance import MASTER, Addr, Instance
from node.sentinel.messages import WARNING, Action, Crash, Event, FlushConfig, Log, ScriptRun


class Outbox:
    """The queue of actions since the shell last took them."""

    def __init__(self) -> None:
        self._out: list[Action] = []
        self._flush_queued = False

    def take(self) -> list[Action]:
        out, self._out = self._out, []
        self._flush_queued = False
        return out

    def add(self, action: Action) -> None:
        self._out.append(action)

    def event(self, level: int, type_: str, ri: Instance | None, text: str, *, describe: bool = True) -> None:
        """sentinelEvent: `text` follows the instance description when `describe` (the %@
        form), else it is the whole message."""
        message = ri.describe() + text if (describe and ri is not None) else text
        self._out.append(Event(level, type_, message))
        if level == WARNING and ri is not None:
            master = ri if ri.flags & MASTER else ri.master
            if master is not None and master.notification_script:
                self._out.append(ScriptRun(master.notification_script, (type_, message)))

    def log(self, level: int, text: str) -> None:
        self._out.append(Log(level, text))

    def flush(self) -> None:
        """sentinelFlushConfig: one rewrite per batch is enough, since the shell renders the
        file from the state once the batch is complete and before acting on the rest."""
        if not self._flush_queued:
            self._flush_queued = True
            self._out.append(FlushConfig())

    def crash(self) -> None:
        """sentinelSimFailureCrash: the shell exits once the actions so far are done."""
        self.log(WARNING, "Sentinel CRASH because of SENTINEL simulate-failure")
        self._out.append(Crash())

    def client_reconf_script(self, master: Instance, role: str, old: Addr, new: Addr) -> None:
        if master.client_reconfig_script:
            args = (master.name, role, "start", old.host, str(old.port), new.host, str(new.port))
            self._out.append(ScriptRun(master.client_reconfig_script, args))
