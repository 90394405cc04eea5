from django.contrib import admin

from review.models import BulkAction, ExportJob, GoldValue, ReviewerSettings, ValueEvent, ValueReview


@admin.register(ValueReview)
class ValueReviewAdmin(admin.ModelAdmin):
    list_display = ("value", "run", "status", "version", "reviewed_by", "reviewed_at")
    list_filter = ("status",)
    raw_id_fields = ("value", "run", "reviewed_by")


@admin.register(ValueEvent)
class ValueEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "action", "value", "old_value", "new_value", "run", "undone")
    list_filter = ("action", "undone")
    raw_id_fields = ("value", "run")


@admin.register(GoldValue)
class GoldValueAdmin(admin.ModelAdmin):
    list_display = (
        "product",
        "attribute_name",
        "schema",
        "value",
        "provenance",
        "from_run",
        "approved_by",
        "approved_at",
    )
    list_filter = ("provenance",)
    search_fields = ("product__sku", "attribute_name", "value")
    raw_id_fields = ("product", "source", "from_run")


@admin.register(BulkAction, ExportJob)
class JobAdmin(admin.ModelAdmin):
    list_display = ("pk", "created_by", "created_at", "status", "done", "total")


admin.site.register(ReviewerSettings)
