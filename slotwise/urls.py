from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("accounts.urls")),
    path("catalog/", include("catalog.urls")),
    path("runs/", include("extraction.urls")),
    path("review/", include("review.urls")),
    path("ab/", include("evaluation.urls")),
    path("status/", include("health.urls")),
    path("models/", include("training.urls")),
]
