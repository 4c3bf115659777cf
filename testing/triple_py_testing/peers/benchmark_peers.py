"""The BenchmarkService echo peers that tests and benchmarks run (tests/peers/README.md).

    from triple_py_testing.peers import start_peer
    with start_peer("go") as peer:   # "grpcio", "go", "rogue", "connect", "dubbo-js", "embedded"
        channel = make_channel(peer.address)  # "127.0.0.1:PORT"

Each peer binds 127.0.0.1 on a free port and announces it with `LISTENING <port>`; start_peer
waits for that line (60 s at most). The Go peer is built into `.build/peers/` under the
repository root on first use (tests/peers/build_go.sh); the Node peers (Connect, dubbo-js) get
their npm packages in tests/peers/node/node_modules on first use (tests/peers/node/install.sh).
A peer is stopped with SIGTERM, then SIGKILL (``process``). A peer's stderr goes to a log under
`.build/peers/logs/`, kept only if the peer exited with an error or was killed.

TLS (grpcio and go peers): `start_peer("go", tls_cert=PEM_PATH, tls_key=PEM_PATH)` serves
TLS with ALPN h2; adding `tls_client_ca=PEM_PATH` makes the peer require and verify client
certificates (mTLS). Other keyword options become flags (`compress_responses=True` ->
`--compress-responses`); a None or False option is left out.
"""
from __future__ import annotations

import sys
from typing import List, Optional

from .builds import (build_go_echo_peer, install_node_packages, peer_python, peers_build_dir,
                     repository_root)
from .process import PeerProcess, start_process

NODE = "node"  # Node.js 20 (with npm) runs the Connect and dubbo-js peers
START_TIMEOUT = 60.0
PEER_NAMES = ("grpcio", "go", "rogue", "connect", "dubbo-js", "grpc-js", "embedded")
# The Node peers' scripts in tests/peers/node/. grpc-js echoes the services of --proto FILE
# (--include DIR) and serves reflection v1 only (@grpc/reflection).
NODE_SCRIPTS = {"connect": "connect_server.mjs", "dubbo-js": "dubbo_server.mjs",
                "grpc-js": "reflection_server.mjs"}

Peer = PeerProcess  # what start_peer returns


def _flag_args(prefix: str, flags: dict) -> List[str]:
    """Command-line arguments for flags: `key=value` -> `<prefix>key value` (underscores in
    keys become dashes), True -> the bare flag, None and False -> nothing."""
    args: List[str] = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        flag = prefix + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def peer_command(name: str, host: str, port: int, **options: object) -> List[str]:
    """The command line that starts peer `name`; options become extra flags."""
    root = repository_root()
    flags = {"host": host, "port": port, **options}
    if name == "go":
        return [str(build_go_echo_peer(root))] + _flag_args("-", flags)
    if name in NODE_SCRIPTS:
        return [NODE, str(install_node_packages(root) / NODE_SCRIPTS[name])] + \
            _flag_args("--", flags)
    if name == "embedded":  # our C echo server, in a process of its own
        return [sys.executable, "-m", "triple_py.server", "--exit-on-stdin-eof"] + \
            _flag_args("--", flags)
    scripts = {"grpcio": "grpcio_server.py", "rogue": "h2_rogue_server.py"}
    if name not in scripts:
        raise ValueError(f"unknown peer {name!r}; expected one of {PEER_NAMES}")
    script = root / "tests" / "peers" / scripts[name]
    return [peer_python(), str(script)] + _flag_args("--", flags)


def start_peer(name: str, *, host: str = "127.0.0.1", port: int = 0,
               timeout: float = START_TIMEOUT, tls_cert: Optional[object] = None,
               tls_key: Optional[object] = None, tls_client_ca: Optional[object] = None,
               **options: object) -> Peer:
    """Start peer `name` (one of PEER_NAMES) and wait
    until it listens. Raises PeerError when it cannot be built or started.

    tls_cert / tls_key (PEM file paths, together) make a grpcio or go peer serve TLS;
    tls_client_ca (a PEM file path) also makes it require client certificates.
    """
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key go together")
    if tls_client_ca is not None and tls_cert is None:
        raise ValueError("tls_client_ca needs tls_cert and tls_key")
    if tls_cert is not None and name not in ("grpcio", "go"):
        raise ValueError(f"the {name!r} peer has no TLS")
    command = peer_command(name, host, port, tls_cert=tls_cert, tls_key=tls_key,
                           tls_client_ca=tls_client_ca, **options)
    root = repository_root()
    return start_process(name, command, cwd=root, log_dir=peers_build_dir(root) / "logs",
                         host=host, timeout=timeout, tls=tls_cert is not None)
