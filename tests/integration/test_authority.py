"""The default :authority of each target scheme is grpcio's (issue 25): a raw HTTP/2
server (python3-h2) records the :authority of the first request from grpcio and from
triple_py for the same target, over TCP and over a unix socket."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from typing import List

import grpc
import h2.config
import h2.connection
import h2.events
import pytest

import triple_py


def first_authority(listener: socket.socket, seen: List[bytes]) -> None:
    """Accepts one connection and records the :authority of its first request."""
    client, _ = listener.accept()
    with client:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        client.sendall(conn.data_to_send())
        client.settimeout(10)
        while True:
            data = client.recv(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    seen.append(dict(event.headers)[b":authority"])
                    return
            client.sendall(conn.data_to_send())


def authority_sent(make_channel, target: str, listener: socket.socket) -> bytes:
    seen: List[bytes] = []
    thread = threading.Thread(target=first_authority, args=(listener, seen))
    thread.start()
    with make_channel(target) as channel:
        with pytest.raises(Exception):  # the server never answers: the call times out
            channel.unary_unary("/a.B/C")(b"", timeout=1)
    thread.join(10)
    return seen[0]


@pytest.fixture
def listeners():
    directory = tempfile.mkdtemp(prefix="tri25-auth-")
    path = os.path.join(directory, "a.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(path)
    unix.listen(4)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    yield path, unix, tcp.getsockname()[1], tcp
    unix.close()
    tcp.close()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("form", ["unix:{path}", "unix://{path}", "ipv4:127.0.0.1:{port}",
                                  "ipv4:127.0.0.1:{port},127.0.0.1:{port}",
                                  "localhost:{port}", "dns:///localhost:{port}"])
def test_default_authority_matches_grpcio(listeners, form):
    path, unix, port, tcp = listeners
    target = form.format(path=path, port=port)
    listener = unix if form.startswith("unix") else tcp
    theirs = authority_sent(grpc.insecure_channel, target, listener)
    ours = authority_sent(triple_py.insecure_channel, target, listener)
    assert ours == theirs, (target, ours, theirs)
