"""Django admin for staff: read and repair catalog data (the product screens are for everyone else)."""

from django.contrib import admin

from catalog.models import Attribute, Catalog, Category, ImportJob, Product, RemovedUpload, SchemaVersion


class AttributeInline(admin.TabularInline):
    model = Attribute
    extra = 0


@admin.register(Catalog)
class CatalogAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at", "created_by")
    search_fields = ("name",)


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


@admin.register(SchemaVersion)
class SchemaVersionAdmin(admin.ModelAdmin):
    list_display = ("category", "version", "note", "created_at", "created_by")
    list_filter = ("category",)
    inlines = [AttributeInline]


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("sku", "title", "category", "catalog", "updated_at")
    list_filter = ("catalog", "category")
    search_fields = ("sku", "title")
    list_select_related = ("catalog", "category")


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = (
        "original_name",
        "catalog",
        "status",
        "created_count",
        "updated_count",
        "skipped_count",
        "created_at",
    )
    list_filter = ("status",)
    readonly_fields = ("message",)


# What the periodic sweep removed (read only: it is a record).
@admin.register(RemovedUpload)
class RemovedUploadAdmin(admin.ModelAdmin):
    list_display = ("original_name", "catalog_name", "status", "uploaded_by", "uploaded_at", "removed_at")
    search_fields = ("original_name", "catalog_name", "uploaded_by")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
