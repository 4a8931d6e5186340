"""`configure`: the one place a sentinel's options change — per master (down-after,
failover-timeout, scripts, credentials, renamed commands, fenced mode, …) and global
(announce-*, credentials for other sentinels, the epochs restored from the file, the timing
parameters of SENTINEL DEBUG, SENTINEL SIMULATE-FAILURE's flags).

SENTINEL SET, SENTINEL CONFIG SET, SENTINEL DEBUG, SENTINEL SIMULATE-FAILURE and the
configuration file all call it. Each validates the value first, with its own error texts
(Redis's, which differ between the commands and the file: node/sentinel/commands.py,
node/sentinel/config.py), and hands `configure` the value to store; `configure` applies what
follows from it (down-after reaches the replicas and sentinels, new credentials drop the
links, a config epoch raises the current epoch). An option not listed is a programming
error."""

from __future__ import annotations

from typing import Final

from node.sentinel.instance import Instance
from node.sentinel.policy.connections import Connections
from node.sentinel.policy.state import State

# A value as the caller validated it: a number, a flag, a text (None: unset), or for
# rename-command the pair (command, new name), new name None to drop the renaming.
Value = int | bool | str | tuple[str, str | None] | None

# SENTINEL DEBUG's parameters, and the `Timings` field each sets.
TIMING_OPTIONS: Final = {
    "info-period": "info_period",
    "ping-period": "ping_period",
    "ask-period": "ask_period",
    "publish-period": "publish_period",
    "default-down-after": "default_down_after",
    "tilt-trigger": "tilt_trigger",
    "tilt-period": "tilt_period",
    "slave-reconf-timeout": "slave_reconf_timeout",
    "min-link-reconnect-period": "min_link_reconnect_period",
    "default-failover-timeout": "default_failover_timeout",
    "election-timeout": "election_timeout",
    "script-max-runtime": "script_max_runtime",
    "script-retry-delay": "script_retry_delay",
}


def _int(value: Value) -> int:
    assert isinstance(value, int) and not isinstance(value, bool), value
    return value


def _flag(value: Value) -> bool:
    assert isinstance(value, bool), value
    return value


def _text(value: Value) -> str | None:
    assert value is None or isinstance(value, str), value
    return value


def configure(state: State, links: Connections, master: Instance | None, option: str, value: Value) -> None:
    """Set `option` of `master`, or the global `option` when `master` is None."""
    if master is None:
        _configure_global(state, option, value)
    else:
        _configure_master(state, links, master, option, value)


def _configure_master(state: State, links: Connections, master: Instance, option: str, value: Value) -> None:
    if option == "down-after-milliseconds":
        # sentinelPropagateDownAfterPeriod: the replicas and sentinels are judged by it too.
        period = _int(value)
        master.down_after_period = period
        for ri in [*master.slaves.values(), *master.sentinels.values()]:
            ri.down_after_period = period
    elif option == "failover-timeout":
        master.failover_timeout = _int(value)
    elif option == "parallel-syncs":
        master.parallel_syncs = _int(value)
    elif option == "quorum":
        master.quorum = _int(value)
    elif option == "master-reboot-down-after-period":
        master.master_reboot_down_after_period = _int(value)
    elif option == "notification-script":
        master.notification_script = _text(value)
    elif option == "client-reconfig-script":
        master.client_reconfig_script = _text(value)
    elif option in ("auth-pass", "auth-user"):
        if option == "auth-pass":
            master.auth_pass = _text(value)
        else:
            master.auth_user = _text(value)
        # dropInstanceConnections: the timer reconnects with the new credentials.
        for ri in [master, *master.slaves.values()]:
            links.close_link(ri.link)
    elif option == "rename-command":
        assert isinstance(value, tuple), value
        old, new = value
        for name in [n for n in master.renamed_commands if n.lower() == old.lower()]:
            del master.renamed_commands[name]
        if new is not None:
            master.renamed_commands[old] = new
    elif option == "fenced-mode":
        master.fenced = _flag(value)
    elif option == "fenced-lease-milliseconds":
        master.lease_ms = _int(value)
    elif option == "config-epoch":
        master.config_epoch = _int(value)
        state.current_epoch = max(state.current_epoch, master.config_epoch)
    elif option == "leader-epoch":
        master.leader_epoch = _int(value)
    else:
        raise ValueError(f"no such master option: {option}")


def _configure_global(state: State, option: str, value: Value) -> None:
    if option == "myid":
        text = _text(value)
        assert text is not None
        state.myid = text
    elif option == "current-epoch":
        # Never back: an epoch, once seen, is kept (a config epoch raises it too).
        state.current_epoch = max(state.current_epoch, _int(value))
    elif option == "announce-ip":
        state.announce_ip = _text(value)
    elif option == "announce-port":
        state.announce_port = _int(value)
    elif option == "deny-scripts-reconfig":
        state.deny_scripts_reconfig = _flag(value)
    elif option == "resolve-hostnames":
        state.resolve_hostnames = _flag(value)
    elif option == "announce-hostnames":
        state.announce_hostnames = _flag(value)
    elif option == "sentinel-user":
        state.sentinel_auth_user = _text(value)
    elif option == "sentinel-pass":
        state.sentinel_auth_pass = _text(value)
    elif option == "fenced-clock-drift-permille":
        state.drift_permille = _int(value)
    elif option == "simulate-failure":
        state.simfailure_flags = _int(value)
    elif option in TIMING_OPTIONS:
        setattr(state.timings, TIMING_OPTIONS[option], _int(value))
    else:
        raise ValueError(f"no such option: {option}")
