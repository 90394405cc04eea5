"""Django admin for staff: what the periodic reaper removed (read only: it is a record)."""

from django.contrib import admin

from workers.models import RemovedUpload


@admin.register(RemovedUpload)
class RemovedUploadAdmin(admin.ModelAdmin):
    list_display = ("original_name", "catalog_name", "status", "uploaded_by", "uploaded_at", "removed_at")
    search_fields = ("original_name", "catalog_name", "uploaded_by")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
