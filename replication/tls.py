"""Optional TLS for the replication link: PEM material in, gRPC credentials out.

The primary presents a certificate (and may require replicas to present one signed by
`client_ca`: mutual TLS); the replica verifies the primary against `ca` (or the system roots
when None). Without TLS the link, including the shared secret, travels in clear text, as
Redis's replication does without tls-replication.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


def _read(path: str | Path | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


@dataclass(frozen=True)
class ServerTls:
    cert_chain: bytes  # PEM certificate chain of the primary
    private_key: bytes  # PEM private key of that certificate
    client_ca: bytes | None = None  # PEM roots for replica certificates; set = mutual TLS

    @classmethod
    def from_files(
        cls, cert_file: str | Path, key_file: str | Path, client_ca_file: str | Path | None = None
    ) -> ServerTls:
        """From tls-cert-file / tls-key-file / tls-ca-cert-file style paths."""
        return cls(Path(cert_file).read_bytes(), Path(key_file).read_bytes(), _read(client_ca_file))

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.private_key, self.cert_chain)],
            root_certificates=self.client_ca,
            require_client_auth=self.client_ca is not None,
        )


@dataclass(frozen=True)
class ClientTls:
    ca: bytes | None = None  # PEM roots that signed the primary's certificate; None = system roots
    cert_chain: bytes | None = None  # the replica's own certificate, for mutual TLS
    private_key: bytes | None = None
    server_name: str | None = None  # verify the primary's certificate for this name instead of the host

    @classmethod
    def from_files(
        cls,
        ca_file: str | Path | None = None,
        cert_file: str | Path | None = None,
        key_file: str | Path | None = None,
        server_name: str | None = None,
    ) -> ClientTls:
        return cls(_read(ca_file), _read(cert_file), _read(key_file), server_name)

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.private_key, certificate_chain=self.cert_chain
        )

    def channel_options(self) -> list[tuple[str, str]]:
        if self.server_name is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]
