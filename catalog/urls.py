from django.urls import path

from catalog.views import imports, products, schemas

app_name = "catalog"
urlpatterns = [
    path("products/", products.product_list, name="products"),
    path("products/<int:pk>/", products.product_detail, name="product"),
    path("schemas/", schemas.schema_list, name="schemas"),
    path("schemas/new/", schemas.category_create, name="category_create"),
    path("schemas/import/", schemas.schema_import, name="schema_import"),
    path("schemas/<int:pk>/", schemas.schema_detail, name="schema"),
    path("schemas/<int:pk>/v<int:version>/", schemas.schema_version, name="schema_version"),
    path("schemas/<int:pk>/export.json", schemas.schema_export, name="schema_export"),
    path("schemas/<int:pk>/attributes/add/", schemas.attribute_add, name="attribute_add"),
    path("schemas/<int:pk>/attributes/<int:index>/edit/", schemas.attribute_edit, name="attribute_edit"),
    path(
        "schemas/<int:pk>/attributes/<int:index>/delete/", schemas.attribute_delete, name="attribute_delete"
    ),
    path("schemas/<int:pk>/attributes/resize/", schemas.attributes_resize, name="attributes_resize"),
    path("schemas/<int:pk>/attributes/<int:index>/move/", schemas.attribute_move, name="attribute_move"),
    path("upload/", imports.upload, name="upload"),
    path("imports/", imports.import_list, name="imports"),
    path("imports/<int:pk>/", imports.import_detail, name="import_detail"),
    path("imports/<int:pk>/remove/", imports.import_remove, name="import_remove"),
    path("catalogs/<int:pk>/remove/", imports.catalog_remove, name="catalog_remove"),
    path("imports/<int:pk>/map/", imports.import_map, name="import_map"),
    path("imports/<int:pk>/preview/", imports.import_preview, name="import_preview"),
    path("imports/<int:pk>/categories/", imports.import_categories, name="import_categories"),
    path("imports/<int:pk>/start/", imports.import_start, name="import_start"),
    path("imports/<int:pk>/progress/", imports.import_progress, name="import_progress"),
    path("imports/<int:pk>/errors.csv", imports.import_errors, name="import_errors"),
]
