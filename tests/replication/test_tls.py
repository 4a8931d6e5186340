"""TLS on the replication link, with certificates generated at test time: a replica that
trusts the primary's certificate syncs; one that does not (or speaks plaintext) stays down;
mutual TLS refuses a replica without a client certificate."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from replication import ClientTls, ServerTls
from tests.replication.inprocess_cluster import eventually, nodes, run


@dataclass(frozen=True)
class Pem:
    cert: bytes
    key: bytes


def self_signed(name: str) -> Pem:
    """A self-signed certificate for 127.0.0.1/localhost (it is its own CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Pem(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def test_replica_syncs_over_tls_and_untrusted_or_plaintext_replicas_stay_down() -> None:
    async def body() -> None:
        primary_pem, stranger = self_signed("primary"), self_signed("stranger")
        async with nodes(4) as (p, good, untrusting, plain):
            port = await p.serve(tls=ServerTls(primary_pem.cert, primary_pem.key))
            good_link = good.follow(port, tls=ClientTls(ca=primary_pem.cert))
            bad_link = untrusting.follow(port, tls=ClientTls(ca=stranger.cert))
            plain_link = plain.follow(port)
            end = p.write_many(20)
            await good.caught_up(end)
            assert good.machine.digest() == p.machine.digest()
            await eventually(lambda: all(link.status().last_error is not None for link in (bad_link, plain_link)))
            for link in (bad_link, plain_link):
                status = link.status()
                assert not status.link_up and status.full_syncs == 0
                assert status.last_error is not None and status.last_error.startswith("UNAVAILABLE")
            assert untrusting.machine.records == [] and plain.machine.records == []
            assert good_link.status().link_up

    run(body())


def test_mutual_tls_requires_a_client_certificate_signed_by_the_configured_ca() -> None:
    async def body() -> None:
        primary_pem, replica_pem = self_signed("primary"), self_signed("replica")
        async with nodes(3) as (p, with_cert, without_cert):
            port = await p.serve(tls=ServerTls(primary_pem.cert, primary_pem.key, client_ca=replica_pem.cert))
            with_cert.follow(port, tls=ClientTls(primary_pem.cert, replica_pem.cert, replica_pem.key))
            refused = without_cert.follow(port, tls=ClientTls(ca=primary_pem.cert))
            end = p.write_many(5)
            await with_cert.caught_up(end)
            await eventually(lambda: refused.status().last_error is not None)
            assert not refused.status().link_up and without_cert.machine.records == []

    run(body())
