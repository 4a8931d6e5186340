"""Who may replicate from this node. A replica's hello carries `masteruser` and `masterauth`
(as a Redis replica sends AUTH before PSYNC); the replica is admitted when those are an ACL
user's credentials and that user may run PSYNC and REPLCONF, which is all a Redis replica
runs to replicate. A replica without credentials is the default user, admitted when the
default user needs no password. A failed login or a refused command is in the ACL LOG, as a
failed AUTH or a refused PSYNC is on Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from node.commands.acl import TOPLEVEL, denial_message
from node.commands.acl_rules import ACL_OK, DENIED_AUTH
from node.commands.acl_users import AclUsers
from node.commands.table import lookup

_WRONGPASS: Final = "WRONGPASS invalid username-password pair or user is disabled."
_NOAUTH: Final = "NOAUTH Authentication required."
# What a replica runs on its primary, as the ACL checks it: the commands a replica's user
# must be allowed (`+psync +replconf`).
_REPLICATION_COMMANDS: Final = ([b"psync", b"?", b"-1"], [b"replconf", b"ack", b"0"])


def _client_info(peer: str, user: bytes) -> str:
    """The ACL LOG's client info of a replica's link, in CLIENT LIST's form: a gRPC stream
    has no client id, descriptor or buffers of its own (0), and is a replica (flags=S)."""
    addr = peer.removeprefix("ipv4:").removeprefix("ipv6:")
    return (
        f"id=0 addr={addr} laddr= fd=-1 name= age=0 idle=0 flags=S db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 "
        f"qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=psync "
        f"user={user.decode('utf-8', 'replace')} redir=-1 resp=2 lib-name= lib-ver="
    )


def replica_access(acl: AclUsers, clock: Callable[[], int]) -> Callable[[str, str, str], str | None]:
    """The `authenticate` hook of the replication service (replication.PrimarySettings)."""

    def authenticate(user: str, password: str, peer: str) -> str | None:
        name = (user or "default").encode("utf-8", "surrogateescape")
        if not user and not password:
            if acl.auth_required():
                return _NOAUTH
            account = acl.default
        else:
            found = acl.authenticate(name, password.encode("utf-8", "surrogateescape"))
            if found is None:
                acl.record(DENIED_AUTH, TOPLEVEL, b"AUTH", name, clock(), _client_info(peer, acl.default.name))
                return _WRONGPASS
            account = found
        for argv in _REPLICATION_COMMANDS:
            spec = lookup(argv, acl.commands.table)
            assert spec is not None
            result, pos = account.check(spec, argv)
            if result != ACL_OK:
                acl.record(result, TOPLEVEL, spec.name.encode(), account.name, clock(), _client_info(peer, account.name))
                return "NOPERM " + denial_message(result, account, spec, argv[pos], True)
        return None

    return authenticate
