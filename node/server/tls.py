"""Client TLS with Redis's directives and rules (tls.c tlsConfigure / createSSLContext): the
server's context for `tls-port` and the client context for outbound links (a replica to its
primary, a sentinel to the nodes, with `tls-replication yes`).

A configuration is built whole and swapped in only when every part of it loaded, so a bad
certificate leaves the running one in place (CONFIG SET fails with Redis's text) and refuses
start-up with the reason. Python's ssl module does not expose TLS 1.3 ciphersuites or the
session cache's settings; those are set on the context's SSL_CTX with libssl's own functions
(`_SslCtx`), and checked.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import ssl
from asyncio import sslproto
from typing import Any, Final

from node.config import Config

log = logging.getLogger("rill.server")

# The directives a TLS configuration is made of: CONFIG SET of any of them rebuilds it.
TLS_DIRECTIVES: Final = (
    "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file", "tls-client-key-file",
    "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-protocols",
    "tls-ciphers", "tls-ciphersuites", "tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size",
    "tls-session-cache-timeout", "tls-replication", "tls-cluster", "tls-auth-clients",
)
UPDATE_FAILED: Final = "Unable to update TLS configuration. Check server logs."

_PROTOCOLS: Final = {
    "tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1, "tlsv1.2": ssl.TLSVersion.TLSv1_2,
    "tlsv1.3": ssl.TLSVersion.TLSv1_3,
}
_ORDER: Final = (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1, ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
_NO_OPTION: Final = {
    ssl.TLSVersion.TLSv1: ssl.OP_NO_TLSv1, ssl.TLSVersion.TLSv1_1: ssl.OP_NO_TLSv1_1,
    ssl.TLSVersion.TLSv1_2: ssl.OP_NO_TLSv1_2, ssl.TLSVersion.TLSv1_3: ssl.OP_NO_TLSv1_3,
}
# The default: TLSv1.2 and TLSv1.3 (REDIS_TLS_PROTO_DEFAULT).
_DEFAULT_PROTOCOLS: Final = frozenset({ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3})
_AUTH_MODES: Final = {"no": ssl.CERT_NONE, "yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL}

# libssl's SSL_CTX_ctrl commands and session cache modes (openssl/ssl.h).
_SSL_CTRL_SET_SESS_CACHE_SIZE: Final = 42
_SSL_CTRL_SET_SESS_CACHE_MODE: Final = 44
_SSL_SESS_CACHE_OFF: Final = 0
_SSL_SESS_CACHE_SERVER: Final = 2


class TlsConfigError(Exception):
    """What is wrong with the TLS configuration, in Redis's words (as it logs them)."""


class _SslCtx:
    """libssl functions Python's ssl module does not offer, called on an SSLContext's SSL_CTX.

    The SSL_CTX pointer is the first field after the object header of CPython's PySSLContext;
    libssl is the library the _ssl module itself is linked with. Every use is checked: the
    ciphersuites through SSLContext.get_ciphers()."""

    def __init__(self) -> None:
        import _ssl

        lib = ctypes.CDLL(_ssl.__file__)
        self._set_ciphersuites = lib.SSL_CTX_set_ciphersuites
        self._set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self._set_ciphersuites.restype = ctypes.c_int
        self._ctrl = lib.SSL_CTX_ctrl
        self._ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
        self._ctrl.restype = ctypes.c_long
        self._set_timeout = lib.SSL_CTX_set_timeout
        self._set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_long]
        self._set_timeout.restype = ctypes.c_long
        self._set_sid_ctx = lib.SSL_CTX_set_session_id_context
        self._set_sid_ctx.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint]
        self._set_sid_ctx.restype = ctypes.c_int

    @staticmethod
    def _pointer(context: ssl.SSLContext) -> int:
        address = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
        if not address:
            raise TlsConfigError("cannot reach the SSL_CTX of an SSLContext")
        return int(address)

    def set_ciphersuites(self, context: ssl.SSLContext, suites: str) -> bool:
        if self._set_ciphersuites(self._pointer(context), suites.encode()) != 1:
            return False
        wanted = [s for s in suites.split(":") if s]
        got = [c["name"] for c in context.get_ciphers() if c.get("protocol") == "TLSv1.3"]
        if sorted(got) != sorted(wanted):
            raise TlsConfigError(f"tls-ciphersuites did not take effect (got {':'.join(got)})")
        return True

    def session_cache(self, context: ssl.SSLContext, enabled: bool, size: int, timeout: int) -> None:
        """SSL_CTX_set_session_cache_mode / sess_set_cache_size / set_timeout /
        set_session_id_context, as tlsConfigure sets them."""
        ptr = self._pointer(context)
        if not enabled:
            self._ctrl(ptr, _SSL_CTRL_SET_SESS_CACHE_MODE, _SSL_SESS_CACHE_OFF, None)
            return
        self._ctrl(ptr, _SSL_CTRL_SET_SESS_CACHE_MODE, _SSL_SESS_CACHE_SERVER, None)
        self._ctrl(ptr, _SSL_CTRL_SET_SESS_CACHE_SIZE, size, None)
        self._set_timeout(ptr, timeout)
        self._set_sid_ctx(ptr, b"redis", 5)


_LIBSSL: _SslCtx | None = None


def _libssl() -> _SslCtx:
    global _LIBSSL
    if _LIBSSL is None:
        _LIBSSL = _SslCtx()
    return _LIBSSL


def parse_protocols(text: str) -> frozenset[ssl.TLSVersion]:
    """parseProtocolsConfig."""
    if not text:
        return _DEFAULT_PROTOCOLS
    out = set()
    for token in text.split(" "):
        version = _PROTOCOLS.get(token.lower())
        if version is None:
            raise TlsConfigError(
                "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."
            )
        out.add(version)
    return frozenset(out)


def _limit_protocols(context: ssl.SSLContext, protocols: frozenset[ssl.TLSVersion]) -> None:
    """Only the listed versions: the range when it is one, SSL_OP_NO_* for the gaps."""
    allowed = [v for v in _ORDER if v in protocols]
    context.minimum_version = allowed[0]
    context.maximum_version = allowed[-1]
    for version in _ORDER[_ORDER.index(allowed[0]):_ORDER.index(allowed[-1]) + 1]:
        if version not in protocols:
            context.options |= _NO_OPTION[version]


def _base_context(config: Config, protocols: frozenset[ssl.TLSVersion], client: bool) -> ssl.SSLContext:
    """createSSLContext: the certificate (the client one for client contexts when set), the
    CA, the protocols and ciphers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT if client else ssl.PROTOCOL_TLS_SERVER)
    _limit_protocols(context, protocols)
    context.options |= ssl.OP_NO_COMPRESSION
    cert = config.get("tls-client-cert-file" if client else "tls-cert-file")
    key = config.get("tls-client-key-file" if client else "tls-key-file")
    password = config.get("tls-client-key-file-pass" if client else "tls-key-file-pass")
    if client and not (cert and key):
        # Without a client certificate of its own, a client context presents the server's.
        cert, key, password = config.get("tls-cert-file"), config.get("tls-key-file"), config.get("tls-key-file-pass")
    try:
        context.load_cert_chain(cert, key, password or None)
    except OSError as exc:  # ssl.SSLError too
        # Which of the two failed: the certificate alone must load as one.
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cert)
        except OSError as cert_exc:
            raise TlsConfigError(f"Failed to load certificate: {cert}: {_reason(cert_exc)}") from None
        raise TlsConfigError(f"Failed to load private key: {key}: {_reason(exc)}") from None
    ca_file = config.get("tls-ca-cert-file")
    ca_dir = config.get("tls-ca-cert-dir")
    if ca_file or ca_dir:
        try:
            context.load_verify_locations(ca_file or None, ca_dir or None)
        except OSError as exc:
            raise TlsConfigError(f"Failed to configure CA certificate(s) file/directory: {_reason(exc)}") from None
    ciphers = config.get("tls-ciphers")
    if ciphers:
        try:
            context.set_ciphers(ciphers)
        except ssl.SSLError:
            raise TlsConfigError(f"Failed to configure ciphers: {ciphers}") from None
    suites = config.get("tls-ciphersuites")
    if suites and not _libssl().set_ciphersuites(context, suites):
        raise TlsConfigError(f"Failed to configure ciphersuites: {suites}")
    return context


def _reason(exc: OSError) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"{exc.library or 'SSL'} routines: {exc.reason or exc.strerror}"
    return exc.strerror or str(exc)


class TlsContexts:
    """The node's (or sentinel's) TLS contexts, rebuilt from its configuration."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.server: ssl.SSLContext | None = None
        self.client: ssl.SSLContext | None = None

    @property
    def wanted(self) -> bool:
        """Whether TLS is in use (tlsConfigure's condition): a TLS port, or TLS links."""
        config = self.config
        return config.get_int("tls-port") != 0 or config.get("tls-replication") == "yes" or config.get("tls-cluster") == "yes"

    def configure(self) -> None:
        """tlsConfigure: build both contexts, or raise TlsConfigError and keep the old ones."""
        config = self.config
        if not config.get("tls-cert-file"):
            raise TlsConfigError("No tls-cert-file configured!")
        if not config.get("tls-key-file"):
            raise TlsConfigError("No tls-key-file configured!")
        if (
            config.get("tls-auth-clients") != "no" or config.get("tls-replication") == "yes"
            or config.get("tls-cluster") == "yes"
        ) and not (config.get("tls-ca-cert-file") or config.get("tls-ca-cert-dir")):
            raise TlsConfigError(
                "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or "
                "tls-auth-clients are enabled!"
            )
        protocols = parse_protocols(config.get("tls-protocols"))
        server = _base_context(config, protocols, client=False)
        _libssl().session_cache(
            server, config.get("tls-session-caching") == "yes", config.get_int("tls-session-cache-size"),
            config.get_int("tls-session-cache-timeout"),
        )
        server.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_SINGLE_DH_USE
        if config.get("tls-prefer-server-ciphers") == "yes":
            server.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
        dh = config.get("tls-dh-params-file")
        if dh:
            try:
                server.load_dh_params(dh)
            except OSError as exc:
                raise TlsConfigError(f"Failed to load {dh}: {_reason(exc)}") from None
        server.verify_mode = _AUTH_MODES[config.get("tls-auth-clients")]
        client = _base_context(config, protocols, client=True)
        # Redis verifies its peer's certificate against the CA, not its name.
        client.check_hostname = False
        client.verify_mode = ssl.CERT_REQUIRED if config.get("tls-ca-cert-file") or config.get("tls-ca-cert-dir") \
            else ssl.CERT_NONE
        self.server, self.client = server, client

    def apply(self) -> str | None:
        """applyTlsCfg (CONFIG SET): rebuild when TLS is in use; Redis's error text on failure
        (the reason goes to the log)."""
        if not self.wanted:
            return None
        try:
            self.configure()
        except TlsConfigError as exc:
            log.warning("Failed to update TLS configuration: %s", exc)
            return UPDATE_FAILED
        log.info("TLS configuration reloaded")
        return None

    def client_context(self) -> ssl.SSLContext | None:
        """The context of outbound links when `tls-replication yes`, else None (plain TCP)."""
        if self.config.get("tls-replication") != "yes":
            return None
        if self.client is None:
            try:
                self.configure()
            except TlsConfigError as exc:
                raise OSError(f"Failed to configure TLS: {exc}") from None
        return self.client


def begin_server_tls(
    transport: asyncio.BaseTransport, protocol: asyncio.Protocol, context: ssl.SSLContext, handshake_timeout: float
) -> asyncio.BaseTransport:
    """Put TLS between an accepted connection and its protocol, from `connection_made`:
    returns the transport the protocol uses from now on (its writes wait until the handshake
    completed; its data_received gets plaintext after it).

    This is loop.start_tls's set-up done at once: start_tls is a coroutine, which runs a loop
    turn too late, when the event loop (uvloop) has already started reading and handed the
    client's first bytes to the protocol instead of the TLS layer. A failed handshake closes
    the connection, and the protocol's connection_lost follows."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    waiter.add_done_callback(_consume)
    factory: Any = _uvloop_ssl_protocol(loop) or sslproto.SSLProtocol
    layer = factory(loop, protocol, context, waiter, True, None, call_connection_made=False,
                    ssl_handshake_timeout=handshake_timeout)
    transport.set_protocol(layer)
    layer.connection_made(transport)
    app: asyncio.BaseTransport = layer._get_app_transport()
    return app


def _uvloop_ssl_protocol(loop: asyncio.AbstractEventLoop) -> Any:
    """uvloop's own TLS layer for its loops (their transports need it), else None."""
    try:
        import uvloop
        import uvloop.loop as uvloop_loop
    except ImportError:
        return None
    # Not in uvloop's stubs: it is the class its own start_tls uses.
    return getattr(uvloop_loop, "SSLProtocol", None) if isinstance(loop, uvloop.Loop) else None


def _consume(waiter: asyncio.Future[None]) -> None:
    # A failed handshake is reported through connection_lost; its exception here is not news.
    if not waiter.cancelled():
        waiter.exception()
