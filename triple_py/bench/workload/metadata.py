"""Request metadata: ghz's ``-m/--metadata`` (a JSON object) and ``-M/--metadata-file``,
templated like the data; ``-bin`` keys take base64 values (sent as the raw bytes, which the
core base64-encodes on the wire)."""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from typing import List, Optional, Tuple

from ..errors import ConfigError
from .template import CallContext, Template, parse_template

__all__ = ["MetadataTemplate", "parse_metadata", "render_metadata"]

_KEY = re.compile(r"^[0-9a-z_.-]+$")
_RESERVED = ("content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding",
             "user-agent", "host", "connection")


@dataclasses.dataclass(frozen=True)
class MetadataTemplate:
    """One metadata entry: a key and its value's template."""

    key: str
    value: Template

    @property
    def is_constant(self) -> bool:
        """True when the value has no action."""
        return self.value.is_constant

    def render(self, ctx: CallContext) -> Tuple[bytes, bytes]:
        """(key, value) as bytes; a ``-bin`` value is decoded from base64."""
        text = self.value.render(ctx)
        if self.key.endswith("-bin"):
            try:
                return self.key.encode(), base64.b64decode(text + "=" * (-len(text) % 4),
                                                           validate=True)
            except (binascii.Error, ValueError):
                raise ConfigError(f"metadata {self.key}: value {text[:40]!r} is not "
                                  f"base64") from None
        if not all(32 <= ord(c) < 127 for c in text):
            raise ConfigError(f"metadata {self.key}: the value must be printable ASCII "
                              f"(use a -bin key for bytes)")
        return self.key.encode(), text.encode()


def parse_metadata(metadata: Optional[str] = None, metadata_file: Optional[str] = None
                   ) -> List[MetadataTemplate]:
    """The metadata flags (a JSON object of strings, or a file holding one)."""
    if metadata is not None and metadata_file is not None:
        raise ConfigError("-m and -M: give the metadata one way")
    if metadata_file is not None:
        try:
            with open(metadata_file) as f:
                metadata = f.read()
        except OSError as exc:
            raise ConfigError(f"--metadata-file {metadata_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"--metadata-file {metadata_file}: not UTF-8 text") from None
    if metadata is None:
        return []
    try:
        value = json.loads(metadata)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"metadata: not JSON: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError("metadata: expected a JSON object of strings")
    out = []
    for key, text in value.items():
        low = key.lower()
        if not _KEY.match(low) or low.startswith((":", "grpc-")) or low in _RESERVED:
            raise ConfigError(f"metadata: {key!r} cannot be sent as a metadata key")
        out.append(MetadataTemplate(low, parse_template(text)))
    return out


def render_metadata(entries: List[MetadataTemplate], ctx: CallContext
                    ) -> List[Tuple[bytes, bytes]]:
    """Every entry rendered for one call."""
    return [m.render(ctx) for m in entries]
