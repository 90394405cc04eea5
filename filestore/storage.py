"""Django's default storage in PostgreSQL: every process that reaches the database reads every file.

Written in CHUNK_BYTES rows inside the caller's transaction (an upload whose job is rolled back
leaves no file behind); read through a seekable stream that fetches one chunk at a time, so a
200 MB catalog is imported, previewed or downloaded in constant memory. Files have no URL: a
download goes through a view that checks who asks (FileResponse over `open`).
"""

import io
from collections.abc import Iterator

from django.core.files import File
from django.core.files.storage import Storage
from django.db import transaction
from django.utils.deconstruct import deconstructible

from filestore.models import CHUNK_BYTES, StoredChunk, StoredFile


def _exact_chunks(content: File) -> Iterator[bytes]:
    """The content in pieces of exactly CHUNK_BYTES (the last one shorter), whatever it yields."""
    pending = bytearray()
    for piece in content.chunks(CHUNK_BYTES):
        pending += piece.encode() if isinstance(piece, str) else piece
        while len(pending) >= CHUNK_BYTES:
            yield bytes(pending[:CHUNK_BYTES])
            del pending[:CHUNK_BYTES]
    if pending:
        yield bytes(pending)


class ChunkReader(io.RawIOBase):
    """A stored file's bytes, one chunk row fetched when the position reaches it."""

    def __init__(self, file_id: int, size: int):
        super().__init__()
        self.file_id, self.size = file_id, size
        self.position = 0
        self._index, self._chunk = -1, b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self.position = base + offset
        return self.position

    def readinto(self, buffer) -> int:
        if self.position >= self.size:
            return 0
        index, start = divmod(self.position, CHUNK_BYTES)
        if index != self._index:
            data = StoredChunk.objects.filter(file_id=self.file_id, index=index).values_list(
                "data", flat=True
            )
            found = data.first()
            if found is None:
                raise OSError(f"stored file {self.file_id} lost its chunk {index}")
            self._index, self._chunk = index, bytes(found)
        piece = self._chunk[start : start + len(buffer)]
        buffer[: len(piece)] = piece
        self.position += len(piece)
        return len(piece)


@deconstructible
class DatabaseStorage(Storage):
    """Files as StoredFile rows with their bytes in StoredChunk rows (filestore.models)."""

    def _save(self, name: str, content: File) -> str:
        with transaction.atomic():
            stored = StoredFile.objects.create(name=name)
            size = 0
            for index, data in enumerate(_exact_chunks(content)):
                StoredChunk.objects.create(file=stored, index=index, data=data)
                size += len(data)
            StoredFile.objects.filter(pk=stored.pk).update(size=size)
        return name

    def _open(self, name: str, mode: str = "rb") -> File:
        if mode not in ("r", "rb"):
            raise ValueError(
                f"stored files are written once, through save(); cannot open {name!r} with {mode!r}"
            )
        stored = StoredFile.objects.filter(name=name).values_list("pk", "size").first()
        if stored is None:
            raise FileNotFoundError(f"no stored file {name!r}")
        return File(io.BufferedReader(ChunkReader(*stored), buffer_size=CHUNK_BYTES), name=name)

    def delete(self, name: str) -> None:
        if name:
            StoredFile.objects.filter(name=name).delete()  # its chunks go by the cascade

    def exists(self, name: str) -> bool:
        return StoredFile.objects.filter(name=name).exists()

    def size(self, name: str) -> int:
        size = StoredFile.objects.filter(name=name).values_list("size", flat=True).first()
        if size is None:
            raise FileNotFoundError(f"no stored file {name!r}")
        return size

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        prefix = path.rstrip("/") + "/" if path else ""
        names = StoredFile.objects.filter(name__startswith=prefix).values_list("name", flat=True)
        rest = [name[len(prefix) :] for name in names]
        return sorted({r.split("/", 1)[0] for r in rest if "/" in r}), sorted(r for r in rest if "/" not in r)

    def get_created_time(self, name: str):
        created = StoredFile.objects.filter(name=name).values_list("created_at", flat=True).first()
        if created is None:
            raise FileNotFoundError(f"no stored file {name!r}")
        return created

    get_modified_time = get_created_time
