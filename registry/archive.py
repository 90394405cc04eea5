"""A model directory as one archive of bytes for PostgreSQL, and back. Torch-free.

The archive is a plain tar of the directory's regular files (no subfolders, no links), written in
a fixed order with fixed metadata, so the same files always give the same bytes and the sha256 of
the bytes is the version's fingerprint. Unpacking checks that hash first and refuses any member
that is not a plain file name.
"""

import hashlib
import io
import tarfile
from pathlib import Path


class ArchiveError(ValueError):
    """The bytes are not the archive they claim to be (hash or contents); the message says how."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack(directory: Path) -> bytes:
    """The regular files directly in `directory`, sorted by name, as deterministic tar bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in Path(directory).iterdir() if p.is_file() and not p.is_symlink()):
            data = path.read_bytes()
            info = tarfile.TarInfo(path.name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def unpack(data: bytes, expected_sha256: str, into: Path) -> None:
    """Write the archive's files into the (existing, empty) directory `into`, after checking that
    the bytes hash to `expected_sha256`."""
    actual = sha256_hex(data)
    if actual != expected_sha256:
        raise ArchiveError(f"archive bytes hash to {actual}, not the recorded {expected_sha256}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            if not member.isfile() or Path(member.name).name != member.name or member.name in ("", ".", ".."):
                raise ArchiveError(f"archive member {member.name!r} is not a plain file name")
            source = tar.extractfile(member)
            (Path(into) / member.name).write_bytes(source.read())
