#!/usr/bin/env python3
"""Smoke test of an installed triple_py (a wheel in a bare root), with no checkout.

    python smoke.py [--keep DIR] [--any-location] [--ca-store auto|system|env]

Run with the interpreter of the environment that installed the wheel.  It needs only the
standard library, triple_py and its ``bench`` extra (the commands' dependencies), plus the
``openssl`` command or the ``cryptography`` module for the throw-away certificates.  Each
step prints PASS or FAIL with its time; the exit status is 1 when any step failed.

1. import: ``import triple_py`` (after ``import ssl``: Python's OpenSSL is loaded first, so a
   bundled OpenSSL must coexist with it), its version, and that it is the installed package
   (under this interpreter's site-packages), not a source tree.
2. unary: a raw-bytes call to the embedded echo server (triple_py.testing.EchoServer).
3. tls: a TLS call verified against the *system* roots: a throw-away CA is installed into
   the system store (as root with update-ca-certificates: ``--ca-store system``) or named by
   SSL_CERT_FILE (``--ca-store env``), and a TLS terminator made with Python's ``ssl`` in
   front of the echo server serves a certificate it signed.  ``secure_channel(target,
   ssl_channel_credentials())`` is given no roots.  Before the CA is trusted the same call
   must fail (so verification is on).
4. scripts (an installed package only): the console scripts next to this interpreter.
   bench-run: ``triple-bench run -z 2s`` (the embedded server), and ``--version``.
5. matrix: a two-arm matrix (2 rounds of 1 s) with its verdicts.
6. benchstat: ``triple-benchstat`` comparing the matrix's two arms (Go benchmark files).

The commands are the console scripts next to this interpreter (or on PATH), else
``python -m triple_py.bench`` / ``python -m triple_py.benchstat``.
"""
from __future__ import annotations

# Python's ssl first: the bundled OpenSSL in triple_py._triple must work next to it.
import ssl  # noqa: I001  (the order is the test)

import argparse
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import triple_py  # noqa: E402
from triple_py.testing import EchoServer  # noqa: E402

METHOD = "/benchmark.BenchmarkService/UnaryCall"
COMMAND_TIMEOUT = 120  # seconds for one command (bench run, matrix, benchstat)
SYSTEM_CA_DIR = Path("/usr/local/share/ca-certificates")
SYSTEM_CA_NAME = "triple-py-smoke-ca.crt"

# `openssl req` needs a distinguished_name section; the extensions are given with -addext.
OPENSSL_CNF = "[ req ]\ndistinguished_name = dn\nprompt = no\n[ dn ]\n"
CA_EXTENSIONS = ("basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
                 "subjectKeyIdentifier=hash")
SERVER_EXTENSIONS = ("basicConstraints=critical,CA:FALSE",
                     "keyUsage=critical,digitalSignature,keyEncipherment",
                     "extendedKeyUsage=serverAuth", "subjectAltName=DNS:localhost,IP:127.0.0.1")

MATRIX_TOML = """\
name = "wheel-smoke"
description = "the wheel's smoke matrix: stream path against fast path"
benchmark = "Smoke"
baseline = "stream-path"
rounds = 2
duration = "1s"
warmup = "0.2s"
arms = ["stream-path", "fastpath"]

[scenarios]
payload = [128]
concurrency = [8]
"""


class StepFailed(Exception):
    """A step's check did not hold."""


def check(condition: bool, message: str) -> None:
    """Raise StepFailed(message) unless condition."""
    if not condition:
        raise StepFailed(message)


# --- commands -------------------------------------------------------------------------------

def command(script: str, module: str) -> List[str]:
    """The console script ``script`` next to this interpreter or on PATH, else
    ``python -m module``."""
    here = Path(sys.executable).parent / script
    if here.is_file() and os.access(here, os.X_OK):
        return [str(here)]
    found = shutil.which(script)
    return [found] if found else [sys.executable, "-m", module]


def run(argv: Sequence[str], cwd: Path) -> str:
    """Runs argv; its stdout, or StepFailed with its output when it fails."""
    print("    $ " + " ".join(argv), flush=True)
    result = subprocess.run(list(argv), cwd=cwd, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if result.returncode != 0:
        raise StepFailed(f"exit status {result.returncode}\n{result.stdout}{result.stderr}")
    return result.stdout


def bench() -> List[str]:
    return command("triple-bench", "triple_py.bench")


def benchstat() -> List[str]:
    return command("triple-benchstat", "triple_py.benchstat")


# --- certificates ---------------------------------------------------------------------------

def make_certs_openssl(directory: Path, openssl: str) -> None:
    """ca.pem, server.pem and server.key under directory, with the openssl command."""
    (directory / "openssl.cnf").write_text(OPENSSL_CNF)

    def openssl_run(*args: str) -> None:
        result = subprocess.run([openssl, *args], cwd=directory, capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise StepFailed(f"openssl {' '.join(args)}: {result.stderr.strip()}")

    def extensions(names: Sequence[str]) -> List[str]:
        return [arg for name in names for arg in ("-addext", name)]

    for name in ("ca", "server"):
        openssl_run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", f"{name}.key")
    openssl_run("req", "-config", "openssl.cnf", "-x509", "-new", "-key", "ca.key",
                "-subj", "/CN=triple_py smoke test CA", "-days", "2", "-sha256",
                *extensions(CA_EXTENSIONS), "-out", "ca.pem")
    # req -x509 -CA (OpenSSL 3): a certificate signed by the CA in one command.
    openssl_run("req", "-config", "openssl.cnf", "-x509", "-new", "-key", "server.key",
                "-CA", "ca.pem", "-CAkey", "ca.key", "-subj", "/CN=localhost", "-days", "1",
                "-sha256", *extensions(SERVER_EXTENSIONS), "-out", "server.pem")


def make_certs_cryptography(directory: Path) -> None:
    """The same files with the cryptography module (when there is no openssl command)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    server_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "triple_py smoke test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
              .issuer_name(ca_name).public_key(server_key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5))
              .not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                             critical=False)
              .add_extension(x509.SubjectAlternativeName(
                  [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                  critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    (directory / "server.pem").write_bytes(server.public_bytes(pem))
    (directory / "server.key").write_bytes(server_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def make_certs(directory: Path) -> str:
    """Makes the certificates with whatever is there; returns what made them."""
    openssl = shutil.which("openssl")
    if openssl:
        make_certs_openssl(directory, openssl)
        return "openssl command"
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise StepFailed("neither the openssl command nor the cryptography module is "
                         "installed: cannot make the test certificates") from None
    make_certs_cryptography(directory)
    return "cryptography module"


class SystemCa:
    """The throw-away CA trusted through the system store (update-ca-certificates) or
    SSL_CERT_FILE; undone by remove()."""

    def __init__(self, ca_pem: Path, mode: str) -> None:
        self.ca_pem = ca_pem
        if mode == "auto":
            can_install = (os.geteuid() == 0 and shutil.which("update-ca-certificates")
                           and SYSTEM_CA_DIR.is_dir())
            mode = "system" if can_install else "env"
        self.mode = mode
        self._old_env: Optional[str] = None
        self._bundle: Optional[Path] = None

    def install(self) -> str:
        """Trusts the CA; describes how."""
        if self.mode == "system":
            shutil.copyfile(self.ca_pem, SYSTEM_CA_DIR / SYSTEM_CA_NAME)
            self._update_store()
            return f"installed in the system store ({SYSTEM_CA_DIR}, update-ca-certificates)"
        # SSL_CERT_FILE: the system bundle (when there is one) plus the CA, so the process
        # still trusts what it trusted before.
        paths = ssl.get_default_verify_paths()
        bundle = self.ca_pem.with_name("bundle.pem")
        system = Path(paths.cafile) if paths.cafile else None
        text = system.read_text() if system and system.is_file() else ""
        bundle.write_text(text + self.ca_pem.read_text())
        self._bundle = bundle
        self._old_env = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = str(bundle)
        return f"SSL_CERT_FILE={bundle}"

    def remove(self) -> None:
        """Undoes install()."""
        if self.mode == "system":
            target = SYSTEM_CA_DIR / SYSTEM_CA_NAME
            if target.exists():
                target.unlink()
                self._update_store()
        elif self._bundle is not None:
            if self._old_env is None:
                os.environ.pop("SSL_CERT_FILE", None)
            else:
                os.environ["SSL_CERT_FILE"] = self._old_env

    @staticmethod
    def _update_store() -> None:
        result = subprocess.run(["update-ca-certificates", "--fresh"], capture_output=True,
                                text=True, timeout=120, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise StepFailed(f"update-ca-certificates: {result.stdout}{result.stderr}")


class TlsTerminator:
    """A loopback TLS server (Python's ssl, ALPN h2) that forwards each connection's bytes
    to a plaintext HTTP/2 server: TLS in front of the embedded echo server."""

    def __init__(self, cert: Path, key: Path, upstream: tuple[str, int]) -> None:
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(cert), str(key))
        self._context.set_alpn_protocols(["h2"])
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stopping = threading.Event()
        self._threads: List[threading.Thread] = []
        self.handshake_errors: List[str] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(10)
        try:
            tls = self._context.wrap_socket(client, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            self.handshake_errors.append(str(exc))
            client.close()
            return
        upstream = socket.create_connection(self._upstream, timeout=10)
        tls.settimeout(None)
        upstream.settimeout(None)
        back = threading.Thread(target=self._pump, args=(upstream, tls), daemon=True)
        back.start()
        self._pump(tls, upstream)
        back.join(timeout=10)
        for sock in (tls, upstream):
            sock.close()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._stopping.set()
        self._accepter.join(timeout=5)
        self._listener.close()


# --- the steps ------------------------------------------------------------------------------

def step_import(any_location: bool) -> str:
    version = getattr(triple_py, "__version__", None)
    check(isinstance(version, str) and bool(version), f"triple_py.__version__ is {version!r}")
    package = Path(triple_py.__file__).resolve().parent
    extension = Path(triple_py._triple.__file__).resolve()  # type: ignore[attr-defined]
    check(extension.parent == package, f"the extension {extension} is not in {package}")
    if not any_location:
        site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
        check(package.parent in site,
              f"triple_py was imported from {package}, not from this interpreter's "
              f"site-packages ({', '.join(sorted(map(str, site)))})")
    return (f"triple_py {version} from {package} (Python {sys.version.split()[0]}, "
            f"{ssl.OPENSSL_VERSION} in the ssl module)")


def step_unary(server: EchoServer) -> str:
    payload = bytes(range(256)) * 4
    with triple_py.insecure_channel(server.address) as channel:
        call = channel.unary_unary(METHOD)
        answer = call(payload, timeout=10)
    check(answer == payload, f"echo returned {len(answer)} bytes, not the {len(payload)} sent")
    return f"{len(payload)} B echoed by {server.address}"


def tls_call(port: int) -> bytes:
    credentials = triple_py.ssl_channel_credentials()
    with triple_py.secure_channel(f"localhost:{port}", credentials) as channel:
        return channel.unary_unary(METHOD)(b"tls smoke", timeout=10)


def step_tls(server: EchoServer, work: Path, ca_store: str) -> str:
    certs = work / "certs"
    certs.mkdir()
    made_by = make_certs(certs)
    terminator = TlsTerminator(certs / "server.pem", certs / "server.key",
                               ("127.0.0.1", server.port))
    system_ca = SystemCa(certs / "ca.pem", ca_store)
    try:
        # Not trusted yet: the call must fail, or verification is not on.
        try:
            tls_call(terminator.port)
        except triple_py.RpcError as exc:
            refused = f"{exc.code()}"
        else:
            raise StepFailed("a TLS call succeeded before its CA was trusted")
        how = system_ca.install()
        answer = tls_call(terminator.port)
        check(answer == b"tls smoke", f"the TLS echo returned {answer!r}")
    finally:
        system_ca.remove()
        terminator.close()
    return (f"certificates by the {made_by}; CA {how}; untrusted first: {refused}; "
            f"then verified with no roots given (the default store)")


def step_scripts() -> str:
    """The console scripts are installed next to this interpreter (an installed wheel)."""
    found = []
    for script in ("triple-bench", "triple-benchstat"):
        path = Path(sys.executable).parent / script
        check(path.is_file() and os.access(path, os.X_OK),
              f"no console script {script} next to {sys.executable}")
        found.append(str(path))
    return ", ".join(found)


def step_bench_run(work: Path) -> str:
    version_line = run(bench() + ["--version"], work).strip()
    check(version_line.endswith(triple_py.__version__),
          f"--version printed {version_line!r}, not version {triple_py.__version__}")
    out = run(bench() + ["run", "-z", "2s", "--gobench", "run.txt"], work)
    check("Requests/sec" in out, f"no 'Requests/sec' in the summary:\n{out}")
    check("[OK]" in out, f"no OK responses in the summary:\n{out}")
    rate = next(line.split(":", 1)[1].strip() for line in out.splitlines()
                if "Requests/sec" in line)
    gobench = (work / "run.txt").read_text()
    check(f"triple_py {triple_py.__version__}" in gobench,
          "the Go benchmark file does not record the version")
    return f"{version_line}; {rate} calls/s"


def step_matrix(work: Path) -> str:
    toml = work / "smoke.toml"
    toml.write_text(MATRIX_TOML)
    out_dir = work / "matrix"
    run(bench() + ["matrix", str(toml), "--out", str(out_dir)], work)
    verdicts = (out_dir / "verdicts.txt").read_text()
    lines = [line for line in verdicts.splitlines() if line.startswith("fastpath vs stream-path")]
    check(bool(lines), f"no verdict for fastpath vs stream-path in verdicts.txt:\n{verdicts}")
    for arm in ("stream-path", "fastpath"):
        check((out_dir / "benchstat" / f"{arm}.txt").is_file(), f"no benchstat/{arm}.txt")
    return "verdict: " + " ".join(lines[0].split())


def step_benchstat(work: Path) -> str:
    old = work / "matrix" / "benchstat" / "stream-path.txt"
    new = work / "matrix" / "benchstat" / "fastpath.txt"
    out = run(benchstat() + [str(old), str(new)], work)
    check("vs base" in out and "sec/op" in out, f"no comparison in benchstat's output:\n{out}")
    row = next((line for line in out.splitlines() if line.startswith("Smoke/")), "")
    check(bool(row), f"no Smoke/ row in benchstat's output:\n{out}")
    return "sec/op " + " ".join(row.split())


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it "
                        "(default: a temporary directory, removed)")
    parser.add_argument("--any-location", action="store_true",
                        help="accept triple_py imported from outside site-packages "
                             "(a checkout)")
    parser.add_argument("--ca-store", choices=("auto", "system", "env"), default="auto",
                        help="how the test CA is trusted (auto: system when root with "
                             "update-ca-certificates, else env)")
    args = parser.parse_args(argv)

    if args.keep:
        work = Path(args.keep).resolve()
        work.mkdir(parents=True, exist_ok=True)
        cleanup: Callable[[], None] = lambda: None
    else:
        work = Path(tempfile.mkdtemp(prefix="triple-smoke-"))
        cleanup = lambda: shutil.rmtree(work, ignore_errors=True)  # noqa: E731

    failures = 0
    started = time.monotonic()

    def step(name: str, fn: Callable[[], str]) -> None:
        nonlocal failures
        t0 = time.monotonic()
        try:
            detail = fn()
        except Exception as exc:  # a failed step is reported, the next ones still run
            failures += 1
            why = str(exc) if isinstance(exc, StepFailed) else traceback.format_exc()
            print(f"FAIL {name:<10} {time.monotonic() - t0:6.2f} s  {why}", flush=True)
        else:
            print(f"PASS {name:<10} {time.monotonic() - t0:6.2f} s  {detail}", flush=True)

    try:
        step("import", lambda: step_import(args.any_location))
        with EchoServer() as server:
            step("unary", lambda: step_unary(server))
            step("tls", lambda: step_tls(server, work, args.ca_store))
        if not args.any_location:
            step("scripts", step_scripts)
        step("bench-run", lambda: step_bench_run(work))
        step("matrix", lambda: step_matrix(work))
        step("benchstat", lambda: step_benchstat(work))
    finally:
        cleanup()
    verdict = "FAIL" if failures else "PASS"
    print(f"{verdict} smoke      {time.monotonic() - started:6.2f} s  "
          f"{failures} step(s) failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
