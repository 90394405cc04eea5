"""A stored file and its chunks (filestore.storage reads and writes them)."""

from django.db import models

# One chunk row holds this many bytes (the last one fewer): a 200 MB upload is 200 rows, and a
# reader holds one chunk in memory at a time.
CHUNK_BYTES = 1024 * 1024


class StoredFile(models.Model):
    """A file by its storage name (say imports/<uuid>.csv); its bytes are in its chunks, in order."""

    name = models.CharField(max_length=500, unique=True)
    size = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.size:,} bytes)"


class StoredChunk(models.Model):
    """Bytes [index * CHUNK_BYTES, (index + 1) * CHUNK_BYTES) of a file; removed with it."""

    file = models.ForeignKey(StoredFile, related_name="chunks", on_delete=models.CASCADE)
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["file", "index"], name="unique_chunk_per_file")]
