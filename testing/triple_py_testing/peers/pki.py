"""A throw-away PKI for peers that serve TLS, made at run time with the `openssl` command.

`make_pki(directory)` makes every certificate the TLS tests and benchmarks need (see `Pki`);
nothing is checked into the repository. Keys are EC P-256, so the whole set takes well under
a second. The openssl configuration is written next to the files, so the host's
/etc/ssl/openssl.cnf does not matter. `Identity.peer_options()` gives the `start_peer`
arguments that serve TLS with a certificate.
"""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Tuple

OPENSSL_TIMEOUT = 30  # seconds for one openssl command

# One configuration for every command: `req` needs a distinguished_name section, `ca` needs
# its database; the *_ext sections are the X.509v3 extensions of each kind of certificate.
OPENSSL_CNF = """\
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
[ ca ]
default_ca = test_ca
[ test_ca ]
database = {db}/index.txt
new_certs_dir = {db}
serial = {db}/serial
default_md = sha256
policy = any_policy
unique_subject = no
[ any_policy ]
commonName = supplied
[ ca_ext ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ server_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:localhost, IP:127.0.0.1
[ server_localhost_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:localhost
[ self_signed_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
subjectAltName = DNS:localhost, IP:127.0.0.1
[ client_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


@dataclasses.dataclass(frozen=True)
class Identity:
    """A certificate (PEM file) and its private key (PEM file)."""

    cert: Path
    key: Path

    @property
    def cert_pem(self) -> bytes:
        return self.cert.read_bytes()

    @property
    def key_pem(self) -> bytes:
        return self.key.read_bytes()

    def peer_options(self) -> dict:
        """start_peer keyword arguments that serve TLS with this identity."""
        return {"tls_cert": str(self.cert), "tls_key": str(self.key)}


@dataclasses.dataclass(frozen=True)
class Pki:
    """The certificates of the TLS tests.

    ca            the test root CA (trusted by the tests' credentials)
    server        signed by ca; SAN DNS:localhost and IP:127.0.0.1
    localhost     signed by ca; SAN DNS:localhost only (no IP)
    expired       signed by ca; SAN as server; valid 2020-01-01 to 2020-01-02 only
    other_ca      a second, unrelated root CA
    other_server  signed by other_ca; SAN as server (an "unknown CA" to the tests)
    self_signed   a self-signed leaf; SAN as server
    client        signed by ca, extendedKeyUsage clientAuth (the mTLS client identity)
    """

    directory: Path
    ca: Identity
    server: Identity
    localhost: Identity
    expired: Identity
    other_ca: Identity
    other_server: Identity
    self_signed: Identity
    client: Identity


def _openssl(directory: Path, *args: str) -> None:
    result = subprocess.run(["openssl", *args], cwd=directory, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=OPENSSL_TIMEOUT)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")


def _key(directory: Path, name: str) -> Path:
    path = directory / f"{name}.key"
    _openssl(directory, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", path.name)
    return path


def _root_ca(directory: Path, name: str, subject: str) -> Identity:
    key = _key(directory, name)
    cert = directory / f"{name}.pem"
    _openssl(directory, "req", "-config", "openssl.cnf", "-x509", "-new", "-key", key.name,
             "-subj", subject, "-days", "3650", "-sha256", "-extensions", "ca_ext",
             "-out", cert.name)
    return Identity(cert, key)


def _csr(directory: Path, name: str, subject: str) -> Tuple[Path, Path]:
    key = _key(directory, name)
    csr = directory / f"{name}.csr"
    _openssl(directory, "req", "-config", "openssl.cnf", "-new", "-key", key.name,
             "-subj", subject, "-out", csr.name)
    return key, csr


_serial = iter(range(0x1000, 0x2000))


def _signed(directory: Path, name: str, subject: str, ca: Identity, extensions: str) -> Identity:
    """A certificate valid from now for 365 days, signed by ca."""
    key, csr = _csr(directory, name, subject)
    cert = directory / f"{name}.pem"
    _openssl(directory, "x509", "-req", "-in", csr.name, "-CA", str(ca.cert),
             "-CAkey", str(ca.key), "-set_serial", str(next(_serial)), "-days", "365",
             "-sha256", "-extfile", "openssl.cnf", "-extensions", extensions,
             "-out", cert.name)
    return Identity(cert, key)


def _expired(directory: Path, name: str, ca: Identity) -> Identity:
    """A server certificate whose validity ended in 2020. `openssl x509` in OpenSSL 3.0
    cannot set dates, so `openssl ca` (which takes -startdate / -enddate) signs it."""
    key, csr = _csr(directory, name, "/CN=localhost")
    cert = directory / f"{name}.pem"
    _openssl(directory, "ca", "-batch", "-config", "openssl.cnf", "-cert", str(ca.cert),
             "-keyfile", str(ca.key), "-startdate", "20200101000000Z",
             "-enddate", "20200102000000Z", "-extfile", "openssl.cnf",
             "-extensions", "server_ext", "-notext", "-in", csr.name, "-out", cert.name)
    return Identity(cert, key)


def make_pki(directory: Path) -> Pki:
    """Makes every certificate of `Pki` under directory (which must exist)."""
    db = directory / "ca-db"
    db.mkdir()
    (db / "index.txt").write_text("")
    (db / "serial").write_text("3000\n")
    (directory / "openssl.cnf").write_text(OPENSSL_CNF.format(db=db))
    ca = _root_ca(directory, "ca", "/CN=triple_py test root CA")
    other_ca = _root_ca(directory, "other-ca", "/CN=unrelated test root CA")
    self_signed_key = _key(directory, "self-signed")
    self_signed = directory / "self-signed.pem"
    _openssl(directory, "req", "-config", "openssl.cnf", "-x509", "-new",
             "-key", self_signed_key.name, "-subj", "/CN=localhost", "-days", "365",
             "-sha256", "-extensions", "self_signed_ext", "-out", self_signed.name)
    return Pki(
        directory=directory,
        ca=ca,
        server=_signed(directory, "server", "/CN=localhost", ca, "server_ext"),
        localhost=_signed(directory, "localhost", "/CN=localhost", ca, "server_localhost_ext"),
        expired=_expired(directory, "expired", ca),
        other_ca=other_ca,
        other_server=_signed(directory, "other-server", "/CN=localhost", other_ca,
                             "server_ext"),
        self_signed=Identity(self_signed, self_signed_key),
        client=_signed(directory, "client", "/CN=triple_py test client", ca, "client_ext"),
    )
