"""What the periodic reaper removed, so an admin can see where an upload went."""

from django.db import models


class RemovedUpload(models.Model):
    """An import job left at upload or mapping longer than the limit, removed with its file."""

    job_id = models.PositiveIntegerField(help_text="The removed import job's id (the row is gone).")
    catalog_name = models.CharField(max_length=200)
    original_name = models.CharField(max_length=255)
    file_name = models.CharField(max_length=500, help_text="The file's name in MEDIA_ROOT (deleted).")
    size_bytes = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, help_text="The step the import was left at.")
    uploaded_by = models.CharField(max_length=150, blank=True)
    uploaded_at = models.DateTimeField()
    removed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-removed_at", "-id"]

    def __str__(self):
        return f"{self.original_name} (import {self.job_id}, removed {self.removed_at:%Y-%m-%d %H:%M})"
