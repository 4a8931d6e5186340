"""One server's ACL users (acl.c's Users, DefaultUser and ACL LOG): creating and changing users
all or nothing, authenticating, the `user` lines of the configuration file, the ACL file
(ACL LOAD/SAVE, `aclfile`), requirepass as the default user's password, and closing the
clients of a user that is deleted or loses channels it is subscribed to.

Rules and checks are node/commands/acl_rules.py; this module owns the state and Redis's
texts for what can go wrong with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, Protocol

from node.commands.acl_rules import (
    DENIED_AUTH,
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
    EALREADY,
    ENOENT,
    SELECTOR_ALLCHANNELS,
    AclCommands,
    RuleError,
    User,
    has_spaces,
    merge_selector_args,
    users_in_order,
)
from node.commands.table import CommandTable
from node.config import ConfigError
from node.config_rewrite import overwrite_file
from node.text import split_inline_args

if TYPE_CHECKING:
    from node.commands.subscriptions import Subscriptions
    from node.config import Config


class AclClient(Protocol):
    """A client as the ACL sees it (node.commands.context.Session): its user, whether it
    authenticated, its subscriptions; a client whose user is deleted is logged out and
    closed."""

    user: User
    authenticated: bool
    closing: bool  # close once the reply to its running command is written

    @property
    def id(self) -> int: ...  # the client id (CLIENT ID)
    @property
    def subscriptions(self) -> Subscriptions | None: ...


def _no_clients() -> Iterable[AclClient]:
    return ()

log = logging.getLogger("rill.acl")

# ACL LOG entries within this many milliseconds of each other are one entry (counted).
_LOG_GROUPING_MS: Final = 60000
LOG_CONTEXTS: Final = ("toplevel", "multi", "lua", "module")
_REASONS: Final = {DENIED_CMD: "command", DENIED_KEY: "key", DENIED_CHANNEL: "channel", DENIED_AUTH: "auth"}


class AclError(Exception):
    """A load that failed as a whole; `message` is Redis's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LogEntry:
    """ACLLogEntry."""

    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "cinfo", "entry_id", "created")

    def __init__(self, reason: int, context: int, obj: bytes, username: bytes, ctime: int, cinfo: str,
                 entry_id: int) -> None:
        self.count = 1
        self.reason = reason
        self.context = context
        self.object = obj
        self.username = username
        self.ctime = ctime
        self.cinfo = cinfo
        self.entry_id = entry_id
        self.created = ctime

    @property
    def reason_name(self) -> str:
        return _REASONS.get(self.reason, "unknown")

    def same_event(self, other: LogEntry) -> bool:
        """ACLLogMatchEntry."""
        return (
            self.reason == other.reason and self.context == other.context
            and abs(self.ctime - other.ctime) <= _LOG_GROUPING_MS
            and self.object == other.object and self.username == other.username
        )


class AclUsers:
    """The users of one server (a node or a sentinel), its ACL log and counters."""

    def __init__(
        self, table: CommandTable, config: Config,
        sessions: Callable[[], Iterable[AclClient]] = _no_clients,
        close: Callable[[AclClient], None] | None = None,
    ) -> None:
        self.commands = AclCommands(table)
        self.config = config
        self.users: dict[bytes, User] = {}
        self.default = self._create_default()
        self.users[b"default"] = self.default
        self.log: list[LogEntry] = []  # newest first
        self._log_count = 0
        # INFO stats' acl_access_denied_auth / _cmd / _key / _channel.
        self.denied: dict[int, int] = {DENIED_AUTH: 0, DENIED_CMD: 0, DENIED_KEY: 0, DENIED_CHANNEL: 0}
        # `user` lines of the configuration file, loaded at start-up (ACLLoadUsersAtStartup).
        self.pending: list[list[bytes]] = []
        # The server's clients, and how to close one now (a server without clients: none).
        self.sessions = sessions
        self.close: Callable[[AclClient], None] = close if close is not None else _no_close
        self.update_default_password(config.requirepass)

    # -- users ---------------------------------------------------------------------------------

    @property
    def pubsub_default(self) -> int:
        """acl-pubsub-default: the channels a new selector starts with."""
        return SELECTOR_ALLCHANNELS if self.config.get("acl-pubsub-default") == "allchannels" else 0

    def _create_default(self) -> User:
        """ACLCreateDefaultUser."""
        user = User(b"default", self.pubsub_default)
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            user.apply(rule, self.commands, self.pubsub_default)
        return user

    def new_user(self, name: bytes) -> User:
        return User(name, self.pubsub_default)

    def auth_required(self) -> bool:
        """authRequired: whether a client that did not authenticate must (the default user has
        a password or is off)."""
        return not self.default.nopass or not self.default.enabled

    def update_default_password(self, password: str) -> None:
        """ACLUpdateDefaultUserPassword: requirepass sets the default user's only password
        (empty: nopass)."""
        rules = [b"resetpass", b">" + password.encode("utf-8", "surrogateescape")] if password else [b"nopass"]
        for rule in rules:
            self.default.apply(rule, self.commands, self.pubsub_default)

    def set_user(self, name: bytes, args: list[bytes]) -> str | None:
        """ACLStringSetUser: apply `args` to a copy of the user (a new one if there is none)
        and keep it only if every rule applied. Returns Redis's error text, or None."""
        ops, unclosed = merge_selector_args(args)
        if unclosed >= 0:
            return "Unmatched parenthesis in acl selector starting at '%s'." % _text(args[unclosed])
        existing = self.users.get(name)
        staged = self.new_user(name)
        if existing is not None:
            staged.copy_from(existing)
        for op in ops:
            try:
                staged.apply(op, self.commands, self.pubsub_default)
            except RuleError as exc:
                return "Error in ACL SETUSER modifier '%s': %s" % (_text(op), exc.message)
        if existing is not None:
            self._close_revoked_subscribers(staged, existing)
            existing.copy_from(staged)
        else:
            self.users[name] = staged
        return None

    def delete(self, names: list[bytes], caller: AclClient) -> int:
        """ACL DELUSER of names other than default; their clients are closed (the caller
        once it has its reply)."""
        deleted = 0
        for name in names:
            user = self.users.pop(name, None)
            if user is not None:
                self._close_clients_of(user, caller)
                deleted += 1
        return deleted

    def authenticate(self, name: bytes, password: bytes) -> User | None:
        """ACLCheckUserCredentials: the user, when it exists, is on and the password fits."""
        user = self.users.get(name)
        if user is None or not user.check_password(password):
            return None
        return user

    def _close_clients_of(self, user: User, caller: AclClient | None) -> None:
        """ACLFreeUserAndKillClients: the user's clients fall back to an unauthenticated
        default user and are closed."""
        for session in list(self.sessions()):
            if session.user is user:
                session.user = self.default
                session.authenticated = False
                if session is caller:
                    session.closing = True
                else:
                    self.close(session)

    def _close_revoked_subscribers(self, new: User, original: User) -> None:
        """ACLKillPubsubClientsIfNeeded: clients of the user subscribed to a channel or
        pattern its new rules no longer allow are closed."""
        if any(s.flags & SELECTOR_ALLCHANNELS for s in new.selectors):
            return
        upcoming = [c for s in new.selectors for c in s.channels]
        if not any(s.flags & SELECTOR_ALLCHANNELS for s in original.selectors) and all(
            c in upcoming for s in original.selectors for c in s.channels
        ):
            return
        for session in list(self.sessions()):
            subs = session.subscriptions
            if session.user is not original or subs is None or not subs.count():
                continue
            if (
                any(not new.may_use_channel(p, True) for p in subs.patterns)
                or any(not new.may_use_channel(c, False) for c in subs.channels)
                or any(not new.may_use_channel(c, False) for c in subs.shard_channels)
            ):
                self.close(session)

    # -- the configuration file and the ACL file ---------------------------------------------

    def load_config(self, config: Config) -> None:
        """ACLAppendUserForLoading for each `user` line of the configuration, then
        ACLLoadUsersAtStartup; a bad line or ACL file is a fatal configuration error
        (ConfigError). CONFIG REWRITE then writes these users."""
        for args, where, line in config.user_lines:
            try:
                self.queue_config_user([a.encode("utf-8", "surrogateescape") for a in args])
            except AclError as exc:
                raise ConfigError(exc.message, where, line) from None
        try:
            self.load_at_startup()
        except AclError as exc:
            raise ConfigError(exc.message) from None
        config.user_config_lines = self.config_lines

    def queue_config_user(self, args: list[bytes]) -> None:
        """ACLAppendUserForLoading: a `user <name> rules…` line of the configuration file,
        checked now (a bad rule is a fatal configuration error) and loaded at start-up. The
        error names the word of the line at the index of the failing rule, as Redis's does
        (an index into the rules used on the whole line: `user`, the name, the rules)."""
        line = [b"user", *args]
        if any(args[0] == queued[0] for queued in self.pending):
            raise AclError("Error in user declaration '%s': %s" % (_text(line[1]), EALREADY))
        ops, unclosed = merge_selector_args(args[1:])
        if unclosed >= 0:
            raise AclError("Error in user declaration '%s': Syntax error" % _text(line[unclosed]))
        trial = self.new_user(b"__fakeuser:0__")
        for j, op in enumerate(ops):
            try:
                trial.apply(op, self.commands, self.pubsub_default)
            except RuleError as exc:
                if exc.message != ENOENT:  # unknown commands are reported when loading
                    word = line[j] if j < len(line) else op
                    raise AclError("Error in user declaration '%s': %s" % (_text(word), exc.message)) from None
        self.pending.append([args[0], *ops])

    def load_at_startup(self) -> None:
        """ACLLoadUsersAtStartup: the `user` lines, or the ACL file (not both). Raises
        AclError with the reason start-up must stop."""
        aclfile = self.config.get("aclfile")
        if aclfile and self.pending:
            raise AclError(
                "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is "
                "invalid. This setup is very likely to lead to configuration errors and security holes, please "
                "define either an ACL file or declare users directly in your redis.conf, but not both."
            )
        for name, *rules in self.pending:
            if has_spaces(name):
                raise AclError("Spaces not allowed in ACL usernames")
            user = self.users.get(name)
            if user is None:
                user = self.users[name] = self.new_user(name)
            else:
                user.apply(b"reset", self.commands, self.pubsub_default)  # only `default` exists already
            for rule in rules:
                try:
                    user.apply(rule, self.commands, self.pubsub_default)
                except RuleError as exc:
                    raise AclError("Error loading ACL rule '%s' for the user named '%s': %s" % (
                        _text(rule), _text(name), exc.message)) from None
            if not user.enabled:
                log.info("The user '%s' is disabled (there is no 'on' modifier in the user description). "
                         "Make sure this is not a configuration error.", _text(name))
        self.pending = []
        if aclfile:
            errors = self.load_file(aclfile)
            if errors is not None:
                raise AclError("Aborting Redis startup because of ACL errors: " + errors)

    def load_file(self, path: str) -> str | None:
        """ACLLoadFromFile: every user of the file, or (on any error) nothing changes and the
        errors are returned in one line. The default user keeps its identity (its rules are
        the file's, or the defaults); every other user's clients are closed."""
        try:
            with open(path, "rb") as f:
                content = f.read()
        except OSError as exc:
            return "Error loading ACLs, opening file '%s': %s" % (path, exc.strerror)
        aclfile = self.config.get("aclfile")
        users: dict[bytes, User] = {}
        errors: list[str] = []
        for lineno, raw in enumerate(content.split(b"\n"), 1):
            line = raw.strip(b" \t\r\n")
            if not line:
                continue
            argv = [w for w in line.split(b" ")]
            if argv[0] != b"user" or len(argv) < 2:
                errors.append("%s:%d should start with user keyword followed by the username. " % (aclfile, lineno))
                continue
            if has_spaces(argv[1]):
                errors.append("'%s:%d: username '%s' contains invalid characters. " % (aclfile, lineno, _text(argv[1])))
                continue
            if argv[1] in users:
                errors.append("WARNING: Duplicate user '%s' found on line %d. " % (_text(argv[1]), lineno))
                continue
            user = users[argv[1]] = self.new_user(argv[1])
            ops, unclosed = merge_selector_args(argv[2:])
            if unclosed >= 0:
                errors.append("%s:%d: Unmatched parenthesis in selector definition." % (aclfile, lineno))
            syntax_error = False
            for op in ops:
                op = op.strip(b"\t\r\n")
                try:
                    user.apply(op, self.commands, self.pubsub_default)
                except RuleError as exc:
                    if exc.message == ENOENT:
                        errors.append("%s:%d: Error in applying operation '%s': %s. " % (
                            aclfile, lineno, _text(op), exc.message))
                    elif not syntax_error:
                        errors.append("%s:%d: %s. " % (aclfile, lineno, exc.message))
                        syntax_error = True
        if errors:
            return "".join(errors) + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        new_default = users.pop(b"default", None) or self._create_default()
        old = self.users
        self.default.copy_from(new_default)
        self.users = {b"default": self.default, **users}
        for name, user in old.items():
            if name != b"default":
                self._close_clients_of(user, None)
        return None

    def save_file(self, path: str) -> bool:
        """ACLSaveToFile: every user as a `user` line, written atomically."""
        try:
            overwrite_file(path, "".join(line + "\n" for line in self.config_lines()))
        except OSError as exc:
            log.warning("Writing ACL file for ACL SAVE: %s", exc.strerror)
            return False
        return True

    def config_lines(self) -> list[str]:
        """`user <name> <rules>` for every user, in name order (ACL LIST, ACL SAVE, CONFIG
        REWRITE)."""
        return [_text(b"user " + u.name + b" " + u.describe()) for u in users_in_order(self.users.values())]

    # -- the ACL log ----------------------------------------------------------------------------

    def record(self, reason: int, context: int, obj: bytes, username: bytes, now_ms: int, cinfo: str) -> None:
        """addACLLogEntry: a refusal (or failed login) into the log, grouped with a similar
        recent one, and counted for INFO."""
        self.denied[reason] = self.denied.get(reason, 0) + 1
        entry = LogEntry(reason, context, obj, username, now_ms, cinfo, self._log_count)
        for i, current in enumerate(self.log[:10]):
            if current.same_event(entry):
                current.cinfo = cinfo
                current.ctime = now_ms
                current.count += 1
                del self.log[i]
                self.log.insert(0, current)
                return
        self._log_count += 1
        self.log.insert(0, entry)
        limit = self.config.get_int("acllog-max-len")
        del self.log[limit:]

    def reset_stats(self) -> None:
        for reason in self.denied:
            self.denied[reason] = 0


def _no_close(session: AclClient) -> None:
    session.closing = True


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def parse_acl_line(line: str) -> list[bytes] | None:
    """The words of a configuration file's `user` line (sdssplitargs)."""
    return split_inline_args(line.encode("utf-8", "surrogateescape"))
