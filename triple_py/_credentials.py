"""TLS credentials shaped like grpcio's ``ssl_channel_credentials``."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True, repr=False)
class ChannelCredentials:
    """PEM material for a TLS channel.  Verification of the server is always on.

    The repr never shows key material.
    """

    root_certificates: Optional[bytes] = None
    private_key: Optional[bytes] = None
    certificate_chain: Optional[bytes] = None
    #: True for ``local_channel_credentials()``: plaintext to this machine.
    local: bool = False
    #: Call-credential plugins every call of the channel applies (see
    #: ``composite_channel_credentials``).
    call_plugins: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        parts = [f"root_certificates={'<pem>' if self.root_certificates else None}",
                 f"private_key={'<redacted>' if self.private_key else None}",
                 f"certificate_chain={'<pem>' if self.certificate_chain else None}"]
        if self.local:
            parts = ["local=True"]
        if self.call_plugins:
            parts.append(f"call_plugins={len(self.call_plugins)}")
        return f"ChannelCredentials({', '.join(parts)})"


def ssl_channel_credentials(root_certificates: Optional[bytes] = None,
                            private_key: Optional[bytes] = None,
                            certificate_chain: Optional[bytes] = None) -> ChannelCredentials:
    """Credentials for ``secure_channel``.

    ``root_certificates``: PEM CA certificates to trust (None: the system store).
    ``private_key`` and ``certificate_chain``: the client's PEM identity, for mTLS.
    """
    if (private_key is None) != (certificate_chain is None):
        raise ValueError("private_key and certificate_chain must be given together")
    return ChannelCredentials(root_certificates, private_key, certificate_chain)


def system_verify_locations() -> dict[str, str]:
    """The host's CA file and directory as Python's ``ssl`` module finds them
    (``ssl.get_default_verify_paths()``: SSL_CERT_FILE / SSL_CERT_DIR, else the
    locations of the OpenSSL Python uses), as the core's ``tls_verify_file`` /
    ``tls_verify_dir``: the system store a channel without root certificates trusts,
    besides the core's own OpenSSL defaults, which a statically linked OpenSSL may look
    for where this host keeps nothing.  Only locations that exist are named."""
    import ssl  # here, not at import: plaintext-only programs never load it

    paths = ssl.get_default_verify_paths()
    found = {"tls_verify_file": paths.cafile, "tls_verify_dir": paths.capath}
    return {key: value for key, value in found.items() if value}


def check_local(host: str) -> None:
    """ValueError unless ``host`` is this machine (``local_channel_credentials``)."""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"local_channel_credentials() need a loopback target, not {host!r}")
