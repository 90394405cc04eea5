from django.urls import path

from accounts.placeholder import not_built_yet

app_name = "catalog"
urlpatterns = [
    path("products/", not_built_yet, name="products"),
    path("schemas/", not_built_yet, name="schemas"),
    path("upload/", not_built_yet, name="upload"),
]
