"""Certificates for TLS benchmarks and tests: a CA, a server certificate for 127.0.0.1 and
localhost and a client certificate signed by it, and a client certificate from another CA (to
be refused), written as PEM files. (deploy/tls-certs.sh makes a deployment's with openssl.)"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    dir: str
    ca: str
    cert: str
    key: str
    client_cert: str
    client_key: str
    other_ca: str  # a CA that signed nothing here
    stranger_cert: str  # a client certificate from another CA
    stranger_key: str


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(cn: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, server: bool) -> tuple[
        x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
    )
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def make_tls_files(directory: str) -> TlsFiles:
    os.makedirs(directory, exist_ok=True)
    ca, ca_key = _ca("Rill Test CA")
    server, server_key = _leaf("localhost", ca, ca_key, server=True)
    client, client_key = _leaf("client", ca, ca_key, server=False)
    other, other_key = _ca("Another CA")
    stranger, stranger_key = _leaf("stranger", other, other_key, server=False)
    p = os.path.join
    return TlsFiles(
        directory,
        _write(p(directory, "ca.crt"), _pem(ca)),
        _write(p(directory, "server.crt"), _pem(server)),
        _write(p(directory, "server.key"), _key_pem(server_key)),
        _write(p(directory, "client.crt"), _pem(client)),
        _write(p(directory, "client.key"), _key_pem(client_key)),
        _write(p(directory, "other-ca.crt"), _pem(other)),
        _write(p(directory, "stranger.crt"), _pem(stranger)),
        _write(p(directory, "stranger.key"), _key_pem(stranger_key)),
    )


def server_args(files: TlsFiles, tls_port: int, *, auth_clients: str = "no") -> list[str]:
    """Command-line flags that give a Rill node or redis-server the same TLS port set-up."""
    return ["--tls-port", str(tls_port), "--tls-cert-file", files.cert, "--tls-key-file", files.key,
            "--tls-ca-cert-file", files.ca, "--tls-auth-clients", auth_clients]
