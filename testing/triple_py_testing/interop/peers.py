"""The interop peers: how each is built, started and stopped, and what it can do.

Every peer is a real gRPC stack serving ``grpc.testing.TestService`` (sources in
``tests/interop/peers/``), built by the run into ``.build/interop/`` (cached: a rebuild
happens only when a source, a proto or the build recipe changed), started on 127.0.0.1
with a free port, and stopped by the run:

======== ========================================== ==============================
peer     stack                                      wires
======== ========================================== ==============================
grpcio   python3-grpcio (Debian), generic handlers   grpc
cpp      libgrpc++ (Debian), built with g++          grpc
go       grpc-go 1.33 (Debian), GOPATH build         grpc
connect  connect-node 1.7 (npm), node:http2 h2c      grpc, triple (Connect unary)
dubbo-js dubbo-node 3.0.0-alpha (npm), same script  grpc, triple (dubbo-js Triple unary)
embedded triple_py's C server (csrc/server/)        grpc, triple
======== ========================================== ==============================

A subprocess peer prints ``LISTENING <port>`` once it accepts connections and serves until
SIGTERM or EOF on its stdin (tests/peers/README.md's convention); it is started and stopped by
triple_py_testing.peers.process, the launcher the tests and benchmarks use too; its stderr goes to a
log under ``.build/interop/logs/``, kept when the peer did not exit cleanly.

A peer that cannot be built or started here raises ``Unavailable`` with the reason; the
runner reports it, it is never silently dropped.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..peers.builds import BuildLock, install_node_packages, peer_python, repository_root
from ..peers.process import PeerError, PeerProcess, RunningPeer
from ..peers.process import start_process as start_peer_process
from . import protos

GOPATH_SYSTEM = "/usr/share/gocode"  # Debian's Go packages (golang-google-grpc-dev, ...)
START_TIMEOUT = 30.0
BUILD_TIMEOUT = 600.0

# Capabilities a case may need from a peer (Case.needs); PeerSpec.lacks says why one is
# missing.
EXPECT_COMPRESSED = "expect_compressed"  # checks each request message's compression
RESPONSE_COMPRESSION = "response_compression"  # response_compressed per call and message


class Unavailable(Exception):
    """The peer cannot be built or started on this machine (the message says why)."""


default_root = repository_root  # $TRIPLE_PY_ROOT, or the checkout this package lives in
ProcessPeer = PeerProcess  # a peer subprocess (triple_py_testing.peers.process)


def start_process(name: str, command: Sequence[str], root: Path, host: str = "127.0.0.1",
                  env: Optional[Mapping[str, str]] = None,
                  timeout: float = START_TIMEOUT) -> PeerProcess:
    """Start ``command`` and wait for its ``LISTENING <port>`` line (logs under
    ``.build/interop/logs/``); Unavailable when it cannot start, exits or stays silent."""
    try:
        return start_peer_process(name, command, cwd=root, host=host, timeout=timeout, env=env,
                                  log_dir=root / ".build" / "interop" / "logs")
    except OSError as exc:
        raise Unavailable(f"cannot start {command[0]}: {exc}") from None
    except PeerError as exc:
        raise Unavailable(str(exc)) from None


# --- build helpers -----------------------------------------------------------------------------

def _run(command: Sequence[str], what: str, cwd: Path,
         env: Optional[Mapping[str, str]] = None) -> None:
    try:
        result = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=BUILD_TIMEOUT,
                                env=None if env is None else dict(env))
    except FileNotFoundError as exc:
        raise Unavailable(f"{what}: {exc.filename} not found") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what}: took more than {BUILD_TIMEOUT:.0f} s") from None
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise Unavailable(f"{what} failed ({shlex.join(command)}):\n{output[-3000:]}")


def _run_parallel(commands: Sequence[Tuple[Sequence[str], str]], cwd: Path,
                  jobs: int) -> None:
    """Run (command, what) pairs, ``jobs`` at a time, as subprocesses (no threads, so an
    abandoned build never holds up the interpreter's exit); Unavailable on the first
    failure, after the others ended."""
    todo = list(commands)
    running: List[Tuple[subprocess.Popen, Sequence[str], str, "tempfile._TemporaryFileWrapper"]] = []
    failure: Optional[str] = None
    deadline = time.monotonic() + BUILD_TIMEOUT
    try:
        while todo or running:
            while todo and len(running) < jobs and failure is None:
                command, what = todo.pop(0)
                output = tempfile.TemporaryFile(mode="w+")
                try:
                    process = subprocess.Popen(list(command), cwd=cwd, stdout=output,
                                               stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, text=True)
                except FileNotFoundError as exc:
                    output.close()
                    raise Unavailable(f"{what}: {exc.filename} not found") from None
                running.append((process, command, what, output))
            if failure is not None:
                todo.clear()
            if time.monotonic() > deadline:
                raise Unavailable(f"{commands[0][1]}...: took more than {BUILD_TIMEOUT:.0f} s")
            for entry in list(running):
                process, command, what, output = entry
                if process.poll() is None:
                    continue
                running.remove(entry)
                if process.returncode != 0 and failure is None:
                    output.seek(0)
                    failure = (f"{what} failed ({shlex.join(command)}):\n"
                               f"{output.read().strip()[-3000:]}")
                output.close()
            time.sleep(0.05)
    finally:
        for process, _, _, output in running:
            process.kill()
            process.wait()
            output.close()
    if failure is not None:
        raise Unavailable(failure)


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise Unavailable(f"'{tool}' not found (Debian package {package})")
    return path


def _fingerprint(*parts: object) -> str:
    """A hash of file contents (Paths) and strings: a build's identity."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(str(part).encode())
            h.update(part.read_bytes())
        else:
            h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def _up_to_date(stamp: Path, fingerprint: str, *outputs: Path) -> bool:
    return (all(p.exists() for p in outputs) and stamp.is_file()
            and stamp.read_text() == fingerprint)


def _proto_args(root: Path) -> List[str]:
    return [f"--proto_path={root / 'proto'}", *protos.PROTO_FILES]


# --- the peers -------------------------------------------------------------------------------

Starter = Callable[[str], RunningPeer]  # host -> a started peer


@dataclass(frozen=True)
class PeerSpec:
    """One interop peer: what it is, what it speaks, what it cannot do, how to get it."""

    name: str
    stack: str
    source: str  # the peer's source, relative to the repository root
    wires: Tuple[str, ...]
    prepare: Callable[[Path], Starter]  # builds (cached); raises Unavailable
    lacks: Mapping[str, str] = field(default_factory=dict)  # capability -> why it's missing


def _prepare_grpcio(root: Path) -> Starter:
    script = root / "tests" / "interop" / "peers" / "grpcio_testservice.py"
    if not script.is_file():
        raise Unavailable(f"{script} not found")
    python = peer_python()  # must see python3-grpcio and python3-protobuf
    if not Path(python).exists():
        raise Unavailable(f"{python} not found ($TRIPLE_PY_PEER_PYTHON)")
    _run([python, "-c", "import grpc, google.protobuf"], "importing grpcio in " + python, root)
    try:
        pb_dir = protos.compile_python(root)
    except protos.ProtoError as exc:
        raise Unavailable(str(exc)) from None

    def start(host: str) -> RunningPeer:
        return start_process("grpcio", [python, str(script), "--pb-dir", str(pb_dir),
                                        "--host", host, "--port", "0"], root, host)
    return start


CXXFLAGS = ["-std=c++17", "-O1", "-g0"]


def _prepare_cpp(root: Path) -> Starter:
    source = root / "tests" / "interop" / "peers" / "cpp" / "test_server.cc"
    if not source.is_file():
        raise Unavailable(f"{source} not found")
    cxx = _need("g++", "g++ / build-essential")
    protoc = _need("protoc", "protobuf-compiler")
    plugin = _need("grpc_cpp_plugin", "protobuf-compiler-grpc")
    _need("pkg-config", "pkg-config")
    try:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++", "protobuf"],
                               capture_output=True, text=True, check=True).stdout.split()
    except subprocess.CalledProcessError as exc:
        raise Unavailable(f"pkg-config grpc++ protobuf failed (Debian packages libgrpc++-dev, "
                          f"libprotobuf-dev): {exc.stderr.strip()}") from None
    cflags = [f for f in flags if not f.startswith(("-l", "-L", "-Wl"))]
    libs = [f for f in flags if f.startswith(("-l", "-L", "-Wl"))]
    out = root / ".build" / "interop" / "cpp"
    gen = out / "gen"
    binary = out / "test_server"
    sources = protos.proto_sources(root)
    with BuildLock(out / ".lock"):
        gen_print = _fingerprint(*sources, cxx, plugin, CXXFLAGS, cflags)
        gen_stamp = out / "gen.stamp"
        units = ["empty.pb", "messages.pb", "test.pb", "test.grpc.pb"]
        objects = [out / f"{unit}.o" for unit in units]
        if not _up_to_date(gen_stamp, gen_print, *objects):
            gen_stamp.unlink(missing_ok=True)
            shutil.rmtree(gen, ignore_errors=True)
            gen.mkdir(parents=True)
            _run([protoc, f"--cpp_out={gen}", f"--grpc_out={gen}",
                  f"--plugin=protoc-gen-grpc={plugin}", *_proto_args(root)],
                 "protoc --cpp_out --grpc_out", root)
            # Objects get a name of this process's first, then are renamed: a build given up
            # at a run's deadline goes on writing its own files, never these.
            staged = [obj.with_name(f"{obj.name}.{os.getpid()}") for obj in objects]
            _run_parallel([([cxx, *CXXFLAGS, f"-I{gen}", *cflags, "-c",
                             str(gen / "grpc" / "testing" / f"{unit}.cc"), "-o", str(tmp)],
                            f"compiling {unit}.cc") for unit, tmp in zip(units, staged)],
                          root, jobs=2)  # the machine has few cores
            for tmp, obj in zip(staged, objects):
                tmp.replace(obj)
            gen_stamp.write_text(gen_print)
        bin_print = _fingerprint(source, gen_print, libs)
        bin_stamp = out / "test_server.stamp"
        if not _up_to_date(bin_stamp, bin_print, binary):
            bin_stamp.unlink(missing_ok=True)
            tmp = out / f"test_server.{os.getpid()}"
            _run([cxx, *CXXFLAGS, f"-I{gen}", *cflags, "-o", str(tmp), str(source),
                  *map(str, objects), *libs, "-lpthread"], "building the C++ peer", root)
            tmp.replace(binary)
            bin_stamp.write_text(bin_print)

    def start(host: str) -> RunningPeer:
        return start_process("cpp", [str(binary), "--host", host, "--port", "0"], root, host)
    return start


GO_IMPORT = "triplepy.interop/grpc/testing"


def _prepare_go(root: Path) -> Starter:
    source = root / "tests" / "interop" / "peers" / "go" / "test_server.go"
    if not source.is_file():
        raise Unavailable(f"{source} not found")
    go = _need("go", "golang-go")
    protoc = _need("protoc", "protobuf-compiler")
    plugin = _need("protoc-gen-go", "golang-goprotobuf-dev (protoc-gen-go 1.3)")
    if not Path(GOPATH_SYSTEM, "src", "google.golang.org", "grpc").is_dir():
        raise Unavailable(f"grpc-go not found under {GOPATH_SYSTEM} "
                          "(Debian package golang-google-grpc-dev)")
    out = root / ".build" / "interop" / "go"
    gopath = out / "gopath"
    binary = out / "test_server"
    # The Go build cache is shared with tests/peers/build_go.sh: grpc-go compiles once.
    gocache = root / ".build" / "peers" / "gocache"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{gopath}:{GOPATH_SYSTEM}",
           "GOCACHE": str(gocache), "GOFLAGS": ""}
    with BuildLock(out / ".lock"):
        fingerprint = _fingerprint(source, *protos.proto_sources(root), go, plugin)
        stamp = out / "test_server.stamp"
        if not _up_to_date(stamp, fingerprint, binary):
            stamp.unlink(missing_ok=True)
            package_root = gopath / "src" / GO_IMPORT.split("/")[0]
            shutil.rmtree(package_root, ignore_errors=True)
            package_root.mkdir(parents=True)
            mapping = ",".join(f"M{name}={GO_IMPORT}" for name in protos.PROTO_FILES)
            # protoc-gen-go 1.3 (golang/protobuf): plugins=grpc also writes the service code.
            _run([protoc, f"--plugin=protoc-gen-go={plugin}",
                  f"--go_out=plugins=grpc,paths=source_relative,{mapping}:{package_root}",
                  *_proto_args(root)], "protoc --go_out=plugins=grpc", root)
            gocache.mkdir(parents=True, exist_ok=True)
            tmp = out / f"test_server.{os.getpid()}"
            _run([go, "build", "-o", str(tmp), str(source)], "go build (GOPATH mode)", root, env)
            tmp.replace(binary)
            stamp.write_text(fingerprint)

    def start(host: str) -> RunningPeer:
        return start_process("go", [str(binary), "-host", host, "-port", "0"], root, host)
    return start


def _prepare_connect(root: Path) -> Starter:
    """connect-node's TestService peer."""
    return _prepare_node(root, "connect", "connect")


def _prepare_dubbo_js(root: Path) -> Starter:
    """Apache Dubbo's dubbo-node (dubbo-js) TestService peer: the same script, --stack dubbo."""
    return _prepare_node(root, "dubbo-js", "dubbo")


def _prepare_node(root: Path, name: str, stack: str) -> Starter:
    # The TestService peer lives beside the BenchmarkService Node peers and shares their
    # pinned npm packages (tests/peers/node/package-lock.json); --stack picks the framework.
    directory = root / "tests" / "peers" / "node"
    script = directory / "interop_test_server.mjs"
    if not script.is_file():
        raise Unavailable(f"{script} not found")
    node = _need("node", "nodejs (Node.js 20)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < 18:
        raise Unavailable(f"Node.js {version or '?'} is too old: {name} needs 18 or later")
    _need("npm", "npm")
    try:
        install_node_packages(root)
    except PeerError as exc:
        raise Unavailable(str(exc)) from None

    def start(host: str) -> RunningPeer:
        return start_process(name, [node, str(script), "--stack", stack, "--host", host,
                                    "--port", "0"], root, host)
    return start


# The embedded server's TestService (every interop result of the embedded peer names it
# as its source).
EMBEDDED_SOURCE = "csrc/server/testservice.c"


class EmbeddedPeer(RunningPeer):
    """triple_py's embedded C server, in this process."""

    def __init__(self, server: object, host: str) -> None:
        super().__init__("embedded", host, server.port)  # type: ignore[attr-defined]
        self._server = server

    def stop(self) -> None:
        self._server.stop()  # type: ignore[attr-defined]


def _prepare_embedded(root: Path) -> Starter:
    # The embedded server (csrc/server/) serves grpc.testing.TestService next to
    # benchmark.BenchmarkService; a tree from before that has only the latter.
    if not (root / EMBEDDED_SOURCE).is_file():
        raise Unavailable("triple_py's embedded server (csrc/server/) implements only "
                          "benchmark.BenchmarkService, not grpc.testing.TestService")
    from triple_py.testing import EchoServer

    def start(host: str) -> RunningPeer:
        try:
            server = EchoServer(host, 0).start()
        except OSError as exc:
            raise Unavailable(f"embedded server: {exc}") from None
        return EmbeddedPeer(server, host)
    return start


_NO_REQUEST_CHECK = ("grpcio's ServicerContext does not tell whether a request message "
                     "arrived compressed, so expect_compressed cannot be checked")
_GO_NO_RESPONSE_CHOICE = ("grpc-go 1.33 picks the response compressor before the handler "
                          "runs (the request's grpc-encoding or a server-wide option): no "
                          "per-call or per-message response_compressed (SetSendCompressor "
                          "is grpc-go 1.54+)")
_CONNECT_NO_RESPONSE_CHOICE = ("connect-node compresses every response message of at least "
                               "compressMinBytes once the client accepts gzip: no per-call or "
                               "per-message response_compressed")
_DUBBO_JS_NO_RESPONSE_CHOICE = ("dubbo-node (a connect-es fork) compresses every response "
                                "message of at least compressMinBytes once the client accepts "
                                "gzip: no per-call or per-message response_compressed")

PEERS: Dict[str, PeerSpec] = {spec.name: spec for spec in (
    PeerSpec("grpcio", "python3-grpcio 1.51 (Debian)",
             "tests/interop/peers/grpcio_testservice.py", ("grpc",), _prepare_grpcio,
             {EXPECT_COMPRESSED: _NO_REQUEST_CHECK}),
    PeerSpec("cpp", "gRPC C++ 1.51 (Debian libgrpc++), g++",
             "tests/interop/peers/cpp/test_server.cc", ("grpc",), _prepare_cpp),
    PeerSpec("go", "grpc-go 1.33 (Debian), protoc-gen-go 1.3",
             "tests/interop/peers/go/test_server.go", ("grpc",), _prepare_go,
             {RESPONSE_COMPRESSION: _GO_NO_RESPONSE_CHOICE}),
    PeerSpec("connect", "connect-node 1.7 (npm), Node.js",
             "tests/peers/node/interop_test_server.mjs", ("grpc", "triple"), _prepare_connect,
             {RESPONSE_COMPRESSION: _CONNECT_NO_RESPONSE_CHOICE}),
    PeerSpec("dubbo-js", "Apache Dubbo dubbo-node 3.0.0-alpha (npm), Node.js",
             "tests/peers/node/interop_test_server.mjs", ("grpc", "triple"), _prepare_dubbo_js,
             {RESPONSE_COMPRESSION: _DUBBO_JS_NO_RESPONSE_CHOICE}),
    PeerSpec("embedded", "triple_py's embedded C server (in process)",
             EMBEDDED_SOURCE, ("grpc", "triple"), _prepare_embedded),
)}
