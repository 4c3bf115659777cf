"""The interop protos (proto/grpc/testing/*.proto), compiled at run time.

``protoc --python_out`` writes ``grpc/testing/{empty,messages,test}_pb2.py`` into a cache
directory under ``.build/interop/``. Those modules would be the package ``grpc.testing``,
which grpcio's own ``grpc`` package shadows, so they are moved into a package of their own,
``triple_interop_pb``, with their cross imports made relative. The cache directory goes on
``sys.path``; the grpcio peer imports the same package (``--pb-dir``).

The descriptors keep their proto file names (``grpc/testing/messages.proto``), so the
messages are ``grpc.testing.*`` on the wire, as every interop peer expects.
"""
from __future__ import annotations

import fcntl
import importlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import List

PACKAGE = "triple_interop_pb"
PROTO_FILES = ("grpc/testing/empty.proto", "grpc/testing/messages.proto",
               "grpc/testing/test.proto")
_IMPORT = re.compile(r"^from grpc\.testing import (\w+_pb2) as ", re.MULTILINE)


class ProtoError(RuntimeError):
    """The protos could not be compiled."""


def proto_sources(root: Path) -> List[Path]:
    """The .proto files under ``root/proto``."""
    return [root / "proto" / name for name in PROTO_FILES]


def python_dir(root: Path) -> Path:
    """The directory that holds (or will hold) the generated ``triple_interop_pb``."""
    return root / ".build" / "interop" / "py"


def compile_python(root: Path) -> Path:
    """Generate ``triple_interop_pb`` (if out of date); return the directory to put on
    sys.path. Safe against concurrent runs (a lock file)."""
    out = python_dir(root)
    package = out / PACKAGE
    sources = proto_sources(root)
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise ProtoError(f"interop protos not found: {', '.join(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = package / "__init__.py"
        newest = max(p.stat().st_mtime for p in sources + [Path(__file__)])
        if stamp.is_file() and stamp.stat().st_mtime >= newest:
            return out
        protoc = shutil.which("protoc")
        if protoc is None:
            raise ProtoError("protoc not found (apt-get install protobuf-compiler)")
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            result = subprocess.run(
                [protoc, f"--proto_path={root / 'proto'}", f"--python_out={tmp}",
                 *PROTO_FILES], capture_output=True, text=True, cwd=root)
            if result.returncode != 0:
                raise ProtoError(f"protoc --python_out failed:\n{result.stderr}")
            staged = Path(tmp) / PACKAGE
            staged.mkdir()
            for name in PROTO_FILES:
                module = Path(name).stem + "_pb2.py"
                text = (Path(tmp) / "grpc" / "testing" / module).read_text()
                (staged / module).write_text(_IMPORT.sub(r"from . import \1 as ", text))
            (staged / "__init__.py").write_text(
                '"""grpc.testing messages, generated from proto/grpc/testing/ by '
                'triple_py_testing.interop.protos."""\n'
                "from . import empty_pb2, messages_pb2, test_pb2  # noqa: F401\n")
            if package.exists():
                shutil.rmtree(package)
            staged.rename(package)
    return out


def load(root: Path) -> ModuleType:
    """Compile (if needed) and import ``triple_interop_pb``: it has ``empty_pb2``,
    ``messages_pb2`` and ``test_pb2``."""
    path = str(compile_python(root))
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(PACKAGE)
