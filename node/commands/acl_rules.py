"""ACL users and what they may run: Redis 7.2's acl.c rules, descriptions and permission
checks, with no I/O (the users' registry, the ACL file and the ACL LOG are in
node/commands/acl_users.py, the ACL command in node/commands/acl.py).

A user has flags (on/off, nopass, sanitize-payload), password hashes (SHA-256, hex) and
selectors: the root one (rules given outside parentheses) and any `(…)` added after it. A
selector holds the commands it allows as a bitmap over command ids (`AclCommands` numbers
every command and subcommand of the server's table, Redis's ACLGetCommandID), the first
arguments it allows of otherwise denied commands (`+select|0`), its key patterns (with %R/%W
permissions) and channel patterns, and `command_rules`, the ordered text of the command
rules that describing the user reproduces (Redis 7.2 keeps the order the rules were given).

A command is allowed when one selector allows the command and every key and channel it
names (ACLCheckAllUserCommandPerm). A user whose root selector has every command, key and
channel (`default` out of the box) is `unrestricted`: the dispatcher skips the check for it,
so the default configuration pays one attribute read per command.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from node.commands.glob import compile_glob
from node.commands.keyspecs import (
    ACCESS,
    CATEGORIES,
    CATEGORY_BITS,
    CHANNEL_PATTERN,
    CHANNEL_PUBLISH,
    CHANNEL_SUBSCRIBE,
    DELETE,
    INSERT,
    NOT_KEY,
    UPDATE,
    describe,
    find_channels,
    find_keys,
)
from node.commands.table import CommandSpec, CommandTable
from node.text import split_inline_args

# Check results (server.h ACL_OK, ACL_DENIED_*): a larger value is the "more relevant" error
# when several selectors refuse.
ACL_OK: Final = 0
DENIED_CMD: Final = 1
DENIED_KEY: Final = 2
DENIED_AUTH: Final = 3
DENIED_CHANNEL: Final = 4

# User flags, in the order a description lists them (acl.c ACLUserFlags).
USER_ENABLED: Final = 1 << 0
USER_DISABLED: Final = 1 << 1
USER_NOPASS: Final = 1 << 2
USER_SKIP_SANITIZE: Final = 1 << 3
USER_SANITIZE: Final = 1 << 4
USER_FLAGS: Final = (
    (b"on", USER_ENABLED), (b"off", USER_DISABLED), (b"nopass", USER_NOPASS),
    (b"skip-sanitize-payload", USER_SKIP_SANITIZE), (b"sanitize-payload", USER_SANITIZE),
)

# Selector flags.
SELECTOR_ROOT: Final = 1 << 0
SELECTOR_ALLKEYS: Final = 1 << 1
SELECTOR_ALLCOMMANDS: Final = 1 << 2
SELECTOR_ALLCHANNELS: Final = 1 << 3

# Key pattern permissions.
READ: Final = 1 << 0
WRITE: Final = 1 << 1
ALL_PERMISSIONS: Final = READ | WRITE

# The command bitmap has USER_COMMAND_BITS_COUNT bits; the last one is never a command's: it
# is set by +@all/allcommands only, and says whether the user may run commands added later
# (a description then starts with +@all rather than -@all).
COMMAND_BITS: Final = 1024
FUTURE_BIT: Final = COMMAND_BITS - 1
ALL_COMMANDS: Final = (1 << COMMAND_BITS) - 1

# ACLSetUser's errno values and their texts (ACLSetUserStringError).
EINVAL: Final = "Syntax error"
ENOENT: Final = "Unknown command or category name in ACL"
EEXIST: Final = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any "
    "effect. Try 'resetkeys' to start with an empty list of patterns"
)
EISDIR: Final = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any "
    "effect. Try 'resetchannels' to start with an empty list of channels"
)
ENODEV: Final = "The password you are trying to remove from the user does not exist"
EBADMSG: Final = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
EALREADY: Final = "Duplicate user found. A user can only be defined once in config files"
ECHILD: Final = "Allowing first-arg of a subcommand is not supported"

_HEX: Final = frozenset(b"0123456789abcdef")
_SPACES: Final = frozenset(b" \t\n\v\f\r\x00")


class RuleError(Exception):
    """A rule ACLSetUser refuses; `message` is ACLSetUserStringError's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def hash_password(password: bytes) -> bytes:
    """ACLHashPassword: the SHA-256 of the password in lower-case hex."""
    return hashlib.sha256(password).hexdigest().encode()


def _valid_hash(text: bytes) -> bool:
    return len(text) == 64 and all(c in _HEX for c in text)


def _password_digest(op: bytes, hashed: bool) -> bytes:
    """The SHA-256 hex digest a password rule names: `>pass`/`<pass` give the password,
    `#hash`/`!hash` the digest itself (refused unless 64 lowercase hex digits)."""
    if not hashed:
        return hash_password(op[1:])
    if not _valid_hash(op[1:]):
        raise RuleError(EBADMSG)
    return op[1:]


def has_spaces(text: bytes) -> bool:
    """ACLStringHasSpaces: whitespace or NUL (names and patterns may hold neither)."""
    return any(c in _SPACES for c in text)


class AclCommands:
    """The commands ACL rules name: every command and subcommand of a server's table, each
    with an id (its bit in a selector's bitmap, assigned by name as Redis's ACLGetCommandID
    does) and its categories."""

    def __init__(self, table: CommandTable) -> None:
        self.table = table
        self.ids: dict[str, int] = {}
        self.all: list[CommandSpec] = []
        for spec in table.values():
            self._add(spec)
            for sub in spec.subcommands.values():
                self._add(sub)

    def _add(self, spec: CommandSpec) -> None:
        spec.acl_id = command_id(spec.name)
        self.ids[spec.name] = spec.acl_id
        self.all.append(spec)

    def lookup(self, name: bytes) -> CommandSpec | None:
        """lookupCommandBySdsLogic (strict): "cmd" or "container|sub", case-insensitively."""
        parts = name.lower().split(b"|")
        if not name or len(parts) > 2:
            return None
        base = self.table.get(parts[0])
        if len(parts) == 1 or base is None or not base.subcommands:
            return base if len(parts) == 1 else None
        return base.subcommands.get(parts[1].decode("utf-8", "replace"))

    def in_category(self, bit: int) -> list[CommandSpec]:
        return [spec for spec in self.all if describe(spec).categories & bit]


# Command ids by full name, shared by every table (a node's and a sentinel's name the same
# command the same way); ids never reach FUTURE_BIT.
_IDS: dict[str, int] = {}


def command_id(name: str) -> int:
    found = _IDS.get(name)
    if found is None:
        found = len(_IDS)
        if found >= FUTURE_BIT:
            raise RuntimeError("too many commands for the ACL bitmap")
        _IDS[name] = found
    return found


class KeyPattern:
    __slots__ = ("pattern", "flags", "matches")

    def __init__(self, pattern: bytes, flags: int) -> None:
        self.pattern = pattern
        self.flags = flags
        self.matches: Callable[[bytes], bool] = compile_glob(pattern)

    def describe(self) -> bytes:
        """sdsCatPatternString."""
        if self.flags == ALL_PERMISSIONS:
            prefix = b"~"
        elif self.flags == READ:
            prefix = b"%R~"
        else:
            prefix = b"%W~"
        return prefix + self.pattern


class Selector:
    """aclSelector."""

    __slots__ = ("flags", "commands", "firstargs", "patterns", "channels", "channel_matchers", "command_rules")

    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.commands = 0
        # Command id -> the first arguments allowed while the command's bit is off.
        self.firstargs: dict[int, list[bytes]] = {}
        self.patterns: list[KeyPattern] = []
        self.channels: list[bytes] = []
        self.channel_matchers: list[Callable[[bytes], bool]] = []
        self.command_rules = b""

    def copy(self) -> Selector:
        out = Selector(self.flags)
        out.commands = self.commands
        out.firstargs = {k: list(v) for k, v in self.firstargs.items()}
        out.patterns = [KeyPattern(p.pattern, p.flags) for p in self.patterns]
        out.channels = list(self.channels)
        out.channel_matchers = list(self.channel_matchers)
        out.command_rules = self.command_rules
        return out

    # -- the command bitmap ----------------------------------------------------------------

    def allows_bit(self, command: int) -> bool:
        return 0 <= command < COMMAND_BITS and (self.commands >> command) & 1 == 1

    def _set_bit(self, command: int, allow: bool) -> None:
        if allow:
            self.commands |= 1 << command
        else:
            self.commands &= ~(1 << command)
            self.flags &= ~SELECTOR_ALLCOMMANDS

    def _change(self, spec: CommandSpec, allow: bool) -> None:
        """ACLChangeSelectorPerm: a container's rule applies to all its subcommands too."""
        self._set_bit(spec.acl_id, allow)
        self.firstargs.pop(spec.acl_id, None)
        for sub in spec.subcommands.values():
            self._set_bit(sub.acl_id, allow)

    def _update_rules(self, rule: bytes, allow: bool) -> None:
        """ACLUpdateCommandRules: the rule replaces any earlier one for the same command or
        category (and the earlier ones for that command's subcommands), then goes last."""
        new = rule.lower()
        kept = []
        for existing in self.command_rules.split(b" ") if self.command_rules else ():
            body = existing[1:]
            if body == new or (len(body) > len(new) and body.startswith(new) and body[len(new)] == 0x7C):
                continue
            kept.append(existing)
        kept.append((b"+" if allow else b"-") + new)
        self.command_rules = b" ".join(kept)

    # -- rules -----------------------------------------------------------------------------

    def apply(self, op: bytes, commands: AclCommands, pubsub_default: int) -> None:
        """ACLSetSelector; raises RuleError."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.flags |= SELECTOR_ALLKEYS
            self.patterns = []
        elif low == b"resetkeys":
            self.flags &= ~SELECTOR_ALLKEYS
            self.patterns = []
        elif low in (b"allchannels", b"&*"):
            self.flags |= SELECTOR_ALLCHANNELS
            self.channels = []
            self.channel_matchers = []
        elif low == b"resetchannels":
            self.flags &= ~SELECTOR_ALLCHANNELS
            self.channels = []
            self.channel_matchers = []
        elif low in (b"allcommands", b"+@all"):
            self.commands = ALL_COMMANDS
            self.flags |= SELECTOR_ALLCOMMANDS
            self.command_rules = b""
            self.firstargs = {}
        elif low in (b"nocommands", b"-@all"):
            self.commands = 0
            self.flags &= ~SELECTOR_ALLCOMMANDS
            self.command_rules = b""
            self.firstargs = {}
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.flags & SELECTOR_ALLCHANNELS:
                raise RuleError(EISDIR)
            pattern = op[1:]
            if has_spaces(pattern):
                raise RuleError(EINVAL)
            if pattern not in self.channels:
                self.channels.append(pattern)
                self.channel_matchers.append(compile_glob(pattern))
            self.flags &= ~SELECTOR_ALLCHANNELS
        elif op[:1] == b"+" and op[1:2] != b"@":
            self._allow(op[1:], commands)
        elif op[:1] == b"-" and op[1:2] != b"@":
            spec = commands.lookup(op[1:])
            if spec is None:
                raise RuleError(ENOENT)
            self._change(spec, False)
            self._update_rules(spec.name.encode(), False)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            bit = CATEGORY_BITS.get(op[2:].decode("utf-8", "replace").lower(), 0) if op[2:].isascii() else 0
            if not bit:
                raise RuleError(ENOENT)
            allow = op[:1] == b"+"
            self._update_rules(op[1:], allow)
            for spec in commands.in_category(bit):
                self._change(spec, allow)
        else:
            raise RuleError(EINVAL)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.flags & SELECTOR_ALLKEYS:
            raise RuleError(EEXIST)
        flags = 0
        offset = 1
        if op[:1] == b"%":
            while offset < len(op):
                c = op[offset]
                if c in b"Rr" and not flags & READ:
                    flags |= READ
                elif c in b"Ww" and not flags & WRITE:
                    flags |= WRITE
                elif c == 0x7E and flags:  # '~' after R and/or W (CVE-2024-31227's fix, 7.2.5)
                    offset += 1
                    break
                else:
                    raise RuleError(EINVAL)
                offset += 1
        else:
            flags = ALL_PERMISSIONS
        pattern = op[offset:]
        if has_spaces(pattern):
            raise RuleError(EINVAL)
        for existing in self.patterns:
            if existing.pattern == pattern:
                existing.flags |= flags
                break
        else:
            self.patterns.append(KeyPattern(pattern, flags))
        self.flags &= ~SELECTOR_ALLKEYS

    def _allow(self, name: bytes, commands: AclCommands) -> None:
        """`+command`, `+container|sub` or `+command|first-arg`."""
        bar = name.rfind(b"|")
        if bar < 0:
            spec = commands.lookup(name)
            if spec is None:
                raise RuleError(ENOENT)
            self._change(spec, True)
            self._update_rules(spec.name.encode(), True)
            return
        base, first_arg = name[:bar], name[bar + 1:]
        spec = commands.lookup(base)
        if spec is None:
            raise RuleError(ENOENT)
        if "|" in spec.name:
            raise RuleError(ECHILD)  # a first argument of a subcommand
        if not first_arg:
            raise RuleError(EINVAL)
        if spec.subcommands:
            sub = commands.lookup(name)
            if sub is None:
                raise RuleError(ENOENT)
            self._change(sub, True)
        else:
            # Allowing one first argument of an otherwise blocked command (SELECT 0).
            allowed = self.firstargs.setdefault(spec.acl_id, [])
            if all(a.lower() != first_arg.lower() for a in allowed):
                allowed.append(first_arg)
        self._update_rules(name, True)

    # -- describing --------------------------------------------------------------------------

    def describe_commands(self) -> bytes:
        """ACLDescribeSelectorCommandRules: +@all or -@all, then the rules in order."""
        start = b"+@all" if self.allows_bit(FUTURE_BIT) else b"-@all"
        return start + b" " + self.command_rules if self.command_rules else start

    def describe_keys(self) -> bytes:
        if self.flags & SELECTOR_ALLKEYS:
            return b"~*"
        return b" ".join(p.describe() for p in self.patterns)

    def describe_channels(self) -> bytes:
        if self.flags & SELECTOR_ALLCHANNELS:
            return b"&*"
        return b" ".join(b"&" + c for c in self.channels)

    def describe(self) -> bytes:
        """ACLDescribeSelector."""
        parts: list[bytes] = []
        if self.flags & SELECTOR_ALLKEYS:
            parts.append(b"~*")
        else:
            parts.extend(p.describe() for p in self.patterns)
        if self.flags & SELECTOR_ALLCHANNELS:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts.extend(b"&" + c for c in self.channels)
        parts.append(self.describe_commands())
        return b" ".join(parts)

    # -- checking ----------------------------------------------------------------------------

    def unrestricted(self) -> bool:
        all_flags = SELECTOR_ALLCOMMANDS | SELECTOR_ALLKEYS | SELECTOR_ALLCHANNELS
        return self.flags & all_flags == all_flags

    def check_key(self, key: bytes, spec_flags: int) -> bool:
        """ACLSelectorCheckKey."""
        if self.flags & SELECTOR_ALLKEYS:
            return True
        needed = 0
        if spec_flags & ACCESS:
            needed |= READ
        if spec_flags & (INSERT | DELETE | UPDATE):
            needed |= WRITE
        return any(pattern.flags & needed == needed and pattern.matches(key) for pattern in self.patterns)

    def check_channel(self, channel: bytes, is_pattern: bool) -> bool:
        """ACLCheckChannelAgainstList: a PSUBSCRIBE pattern must equal an allowed pattern;
        a channel must match one."""
        if is_pattern:
            return channel in self.channels
        return any(match(channel) for match in self.channel_matchers)

    def check(self, spec: CommandSpec, argv: Sequence[bytes], keys: list[tuple[int, int]] | None) -> tuple[int, int]:
        """ACLSelectorCheckCmd: (result, position of the argument refused); `keys` are the
        command's keys when already found (shared by the selectors of one check)."""
        if not self.flags & SELECTOR_ALLCOMMANDS and "no_auth" not in spec.flags and not self.allows_bit(spec.acl_id):
            allowed = self.firstargs.get(spec.acl_id)
            index = 2 if "|" in spec.name else 1
            if allowed is None or len(argv) <= index:
                return DENIED_CMD, 0
            arg = argv[index].lower()
            if all(a.lower() != arg for a in allowed):
                return DENIED_CMD, 0
        if not self.flags & SELECTOR_ALLKEYS and describe(spec).has_keys:
            for pos, flags in keys if keys is not None else find_keys(spec, argv):
                if not self.check_key(argv[pos], flags):
                    return DENIED_KEY, pos
        if not self.flags & SELECTOR_ALLCHANNELS:
            channels = describe(spec).channels
            if channels is not None and channels[0] & (CHANNEL_PUBLISH | CHANNEL_SUBSCRIBE):
                for pos, flags in find_channels(spec, argv):
                    if not self.check_channel(argv[pos], flags & CHANNEL_PATTERN != 0):
                        return DENIED_CHANNEL, pos
        return ACL_OK, 0


class User:
    """An ACL user (acl.c user)."""

    __slots__ = ("name", "flags", "passwords", "selectors", "unrestricted", "_description", "_plans")

    def __init__(self, name: bytes, pubsub_default: int) -> None:
        self.name = name
        self.flags = USER_DISABLED | USER_SANITIZE
        self.passwords: list[bytes] = []  # SHA-256 hex digests
        self.selectors: list[Selector] = [Selector(SELECTOR_ROOT | pubsub_default)]
        # Whether the root selector allows every command, key and channel: the permission
        # check is then skipped (the dispatcher reads this on every command).
        self.unrestricted = False
        self._description: bytes | None = None  # ACLDescribeUser's cached string
        # Command id -> what `permits` needs to decide for this user (see _plan), made when
        # the command is first checked and dropped whenever the user changes: Redis's
        # per-user command bitmap, extended with the key patterns a command's keys need.
        self._plans: dict[int, bool | _KeyPlan | None] = {}

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def enabled(self) -> bool:
        return not self.flags & USER_DISABLED

    @property
    def nopass(self) -> bool:
        return self.flags & USER_NOPASS != 0

    def copy_from(self, other: User) -> None:
        """ACLCopyUser: the rules of `other`, keeping this user's name (and identity)."""
        self.flags = other.flags
        self.passwords = list(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]
        self.changed()

    def changed(self) -> None:
        self._description = None
        self.unrestricted = self.root.unrestricted()
        self._plans = {}

    def permits(self, spec: CommandSpec, argv: Sequence[bytes]) -> bool:
        """Whether the user may run argv, decided cheaply: True only when `check` would
        answer ACL_OK; False when it would not, or when deciding needs the full check (more
        selectors, channels, first arguments, keys found by keyword): the caller then runs
        `check`, which has the refusal's reason. The dispatcher's fast path asks this for a
        restricted user, so an allowed command costs a dict lookup and one pattern match
        per key."""
        plan = self._plans.get(spec.acl_id, _UNPLANNED)
        if plan is _UNPLANNED:
            plan = self._plans[spec.acl_id] = self._plan(spec)
        if type(plan) is bool:
            return plan
        if plan is None:
            return False
        assert isinstance(plan, _KeyPlan)
        argc = len(argv)
        first = plan.first
        last = first + plan.lastkey if plan.lastkey >= 0 else argc + plan.lastkey
        if first >= argc or last >= argc or last < first:
            return False
        matchers = plan.matchers
        for i in range(first, last + 1, plan.step):
            key = argv[i]
            for match in matchers:
                if match(key):
                    break
            else:
                return False
        return True

    def _plan(self, spec: CommandSpec) -> bool | _KeyPlan | None:
        """What deciding `spec` takes for this user: True (allowed, whatever the arguments),
        False (refused, whatever the arguments), a _KeyPlan (allowed if its keys match), or
        None (the full check decides)."""
        info = describe(spec)
        channels = info.channels is not None and info.channels[0] & (CHANNEL_PUBLISH | CHANNEL_SUBSCRIBE) != 0
        if len(self.selectors) != 1:
            return None
        selector = self.root
        allowed = (
            selector.flags & SELECTOR_ALLCOMMANDS != 0 or "no_auth" in spec.flags or selector.allows_bit(spec.acl_id)
        )
        if not allowed:
            return None if spec.acl_id in selector.firstargs else False
        if channels and not selector.flags & SELECTOR_ALLCHANNELS:
            return None
        if not info.has_keys or selector.flags & SELECTOR_ALLKEYS:
            return True
        specs = [k for k in info.specs if not k.flags & NOT_KEY]
        if not info.by_specs or len(specs) != 1 or specs[0].begin != "index" or specs[0].find != "range" or specs[0].c:
            return None
        ks = specs[0]
        needed = (READ if ks.flags & ACCESS else 0) | (WRITE if ks.flags & (INSERT | DELETE | UPDATE) else 0)
        matchers = [p.matches for p in selector.patterns if p.flags & needed == needed]
        if not matchers:
            return False
        return _KeyPlan(ks.index, ks.a, ks.b or 1, matchers)

    def apply(self, op: bytes, commands: AclCommands, pubsub_default: int) -> None:
        """ACLSetUser: one rule; raises RuleError. An empty rule does nothing."""
        try:
            self._apply(op, commands, pubsub_default)
        finally:
            self.changed()

    def _apply(self, op: bytes, commands: AclCommands, pubsub_default: int) -> None:
        if not op:
            return
        low = op.lower()
        if low == b"on":
            self.flags = (self.flags | USER_ENABLED) & ~USER_DISABLED
        elif low == b"off":
            self.flags = (self.flags | USER_DISABLED) & ~USER_ENABLED
        elif low == b"skip-sanitize-payload":
            self.flags = (self.flags | USER_SKIP_SANITIZE) & ~USER_SANITIZE
        elif low == b"sanitize-payload":
            self.flags = (self.flags | USER_SANITIZE) & ~USER_SKIP_SANITIZE
        elif low == b"nopass":
            self.flags |= USER_NOPASS
            self.passwords = []
        elif low == b"resetpass":
            self.flags &= ~USER_NOPASS
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            digest = _password_digest(op, hashed=op[:1] == b"#")
            if digest not in self.passwords:
                self.passwords.append(digest)
            self.flags &= ~USER_NOPASS
        elif op[:1] in (b"<", b"!"):
            digest = _password_digest(op, hashed=op[:1] == b"!")
            if digest not in self.passwords:
                raise RuleError(ENODEV)
            self.passwords.remove(digest)
        elif op[:1] == b"(" and op[-1:] == b")":
            self.selectors.append(selector_from(op, commands, pubsub_default))
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif low == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels"):
                self._apply(rule, commands, pubsub_default)
            if pubsub_default & SELECTOR_ALLCHANNELS:
                self._apply(b"allchannels", commands, pubsub_default)
            for rule in (b"off", b"sanitize-payload", b"clearselectors", b"-@all"):
                self._apply(rule, commands, pubsub_default)
        else:
            self.root.apply(op, commands, pubsub_default)

    def describe(self) -> bytes:
        """ACLDescribeUser: flags, password hashes, the root selector, then `(…)` selectors."""
        if self._description is None:
            parts = [name for name, flag in USER_FLAGS if self.flags & flag]
            parts.extend(b"#" + p for p in self.passwords)
            text = b" ".join(parts)
            for selector in self.selectors:
                described = selector.describe()
                if selector.flags & SELECTOR_ROOT:
                    text = text + b" " + described if text else described
                else:
                    text += b" (" + described + b")"
            self._description = text
        return self._description

    def check_password(self, password: bytes) -> bool:
        """ACLCheckUserCredentials, once the user exists: enabled, and nopass or a password
        whose hash matches (compared in constant time)."""
        if self.flags & USER_DISABLED:
            return False
        if self.flags & USER_NOPASS:
            return True
        digest = hash_password(password)
        return any(_same(digest, known) for known in self.passwords)

    def check(self, spec: CommandSpec, argv: Sequence[bytes]) -> tuple[int, int]:
        """ACLCheckAllUserCommandPerm: (ACL_OK, 0), or the most relevant refusal with the
        position of the argument refused (0 for the command)."""
        relevant, last = DENIED_CMD, 0
        keys: list[tuple[int, int]] | None = None
        for selector in self.selectors:
            if keys is None and not selector.flags & SELECTOR_ALLKEYS and len(self.selectors) > 1:
                keys = find_keys(spec, argv) if describe(spec).has_keys else []
            result, pos = selector.check(spec, argv, keys)
            if result == ACL_OK:
                return ACL_OK, 0
            if result > relevant or (result == relevant and pos > last):
                relevant, last = result, pos
        return relevant, last

    def may_use_every_key(self, spec: CommandSpec, argv: Sequence[bytes], flags: int) -> bool:
        """ACLUserCheckCmdWithUnrestrictedKeyAccess: allowed to run the command, by a selector
        that may also access every key with `flags`."""
        for selector in self.selectors:
            result, _pos = selector.check(spec, argv, None)
            if result != ACL_OK:
                continue
            if selector.flags & SELECTOR_ALLKEYS:
                return True
            needed = (READ if flags & ACCESS else 0) | (WRITE if flags & (INSERT | DELETE | UPDATE) else 0)
            if any(p.flags & needed == needed and p.pattern == b"*" for p in selector.patterns):
                return True
        return False

    def may_use_channel(self, channel: bytes, is_pattern: bool) -> bool:
        """ACLUserCheckChannelPerm."""
        for selector in self.selectors:
            if selector.flags & SELECTOR_ALLCHANNELS or selector.check_channel(channel, is_pattern):
                return True
        return False


class _KeyPlan:
    """A command allowed to a user when each of its keys (one index+range key spec: argv[first]
    to argv[last] by step, last = first + lastkey, or counted from the end when negative)
    matches one of the user's patterns that grant what the key spec needs."""

    __slots__ = ("first", "lastkey", "step", "matchers")

    def __init__(self, first: int, lastkey: int, step: int, matchers: list[Callable[[bytes], bool]]) -> None:
        self.first = first
        self.lastkey = lastkey
        self.step = step
        self.matchers = matchers


_UNPLANNED: Final = object()


def _same(a: bytes, b: bytes) -> bool:
    diff = len(a) ^ len(b)
    for x, y in zip(a, b):
        diff |= x ^ y
    return diff == 0


def selector_from(op: bytes, commands: AclCommands, pubsub_default: int) -> Selector:
    """aclCreateSelectorFromOpSet: `(rule rule …)` as a new selector."""
    selector = Selector(pubsub_default)
    for rule in split_inline_args(op[1:-1]) or ():
        selector.apply(rule, commands, pubsub_default)
    return selector


def merge_selector_args(args: Sequence[bytes]) -> tuple[list[bytes], int]:
    """ACLMergeSelectorArguments: a selector spread over several arguments (`(~k*`, `+get)`)
    joined into one. Returns the rules and -1, or ([], the index of the unclosed one)."""
    merged: list[bytes] = []
    start = -1
    current = b""
    for j, op in enumerate(args):
        if start == -1 and op[:1] == b"(" and op[-1:] != b")":
            current = op
            start = j
            continue
        if start != -1:
            current += b" " + op
            if op[-1:] == b")":
                start = -1
                merged.append(current)
            continue
        merged.append(op)
    if start != -1:
        return [], start
    return merged, -1


def category_list() -> list[bytes]:
    return [name.encode() for name in CATEGORIES]


def user_flags(user: User) -> list[bytes]:
    return [name for name, flag in USER_FLAGS if user.flags & flag]


def users_in_order(users: Iterable[User]) -> list[User]:
    """The order of Redis's users rax: byte order of the names."""
    return sorted(users, key=lambda u: u.name)


def _internal_user() -> User:
    user = User(b"(internal)", SELECTOR_ALLCHANNELS)
    user.flags = USER_ENABLED | USER_NOPASS | USER_SANITIZE
    root = user.root
    root.flags |= SELECTOR_ALLKEYS | SELECTOR_ALLCOMMANDS | SELECTOR_ALLCHANNELS
    root.commands = ALL_COMMANDS
    user.changed()
    return user


# The user of sessions the server makes for itself (loading the AOF, applying a primary's
# log): not in any registry, allowed everything.
INTERNAL_USER: Final = _internal_user()
