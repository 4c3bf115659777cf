"""Shared helpers of the TLS and gzip integration tests (test_tls.py, test_gzip.py).

`make_pki(directory)` (triple_py_testing.peers.pki) makes, at run time with the `openssl`
command, every certificate the TLS tests need (see `Pki`).

`PeerPool` starts TLS (or other flavoured) peers on demand and keeps each one for the
session; `peak_rss_growth` runs a function and reports how much the peak RSS rose.
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, Optional, Tuple

from peers.launch import Peer, start_peer
# (the tests import them from here)
from triple_py_testing.peers.pki import Identity, Pki, make_pki  # noqa: F401

from _helpers import peak_rss_bytes, reset_peak_rss

def pem_body(pem: bytes) -> list[bytes]:
    """The base64 lines of a PEM block (no BEGIN/END lines): what must never leak."""
    return [line for line in pem.splitlines() if line and not line.startswith(b"-----")]


class PeerPool:
    """Peers started on first request and kept until close(): one per (name, options)."""

    def __init__(self) -> None:
        self._peers: Dict[tuple, Peer] = {}
        self._lock = threading.Lock()

    def get(self, name: str, **options: object) -> Peer:
        key = (name, tuple(sorted((k, str(v)) for k, v in options.items())))
        with self._lock:
            if key not in self._peers:
                self._peers[key] = start_peer(name, **options)
            return self._peers[key]

    def close(self) -> None:
        with self._lock:
            peers, self._peers = list(self._peers.values()), {}
        for peer in peers:
            peer.stop()


def peak_rss_growth(fn: Callable[[], object]) -> Tuple[object, Optional[int]]:
    """(fn(), how many bytes the peak RSS rose above the RSS at the start), or None for the
    growth if the kernel does not let VmHWM be reset."""
    if not reset_peak_rss():
        return fn(), None
    before = peak_rss_bytes()
    result = fn()
    return result, peak_rss_bytes() - before
