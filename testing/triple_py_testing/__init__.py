"""triple_py's test tools, kept out of triple_py's wheel (most of them need a checkout).

- ``peers``: start and stop the peer servers of the tests and benchmarks (their sources are
  in tests/peers/; the grpc-go peer is built, the Node peers' packages installed, on first
  use), and ``peers.pki``, a throw-away PKI made with the ``openssl`` command;
- ``interop``: the interop grid, ``python -m triple_py_testing.interop`` (its peers'
  sources in tests/interop/peers/ and tests/peers/node/, its protos in proto/grpc/testing/);
- ``faults``: ``FaultProxy``, a loopback TCP proxy with faults switched at run time.

The repository root is ``$TRIPLE_PY_ROOT`` or the checkout this package lives in
(``peers.builds.repository_root``); install it editable: ``pip install -e testing``.
"""
