from django.urls import path

from training import views

app_name = "training"
urlpatterns = [
    path("", views.catalogs, name="catalogs"),
    path("catalog/<int:catalog_id>/", views.improve, name="improve"),
    path("catalog/<int:catalog_id>/start/", views.start, name="start"),
    path("catalog/<int:catalog_id>/undo/", views.undo_promotion, name="undo"),
    path("jobs/<int:job_id>/", views.job, name="job"),
    path("jobs/<int:job_id>/progress/", views.job_progress, name="progress"),
    path("jobs/<int:job_id>/cancel/", views.cancel, name="cancel"),
    path("versions/<int:version_id>/promote/", views.promote, name="promote"),
    path("versions/<int:version_id>/discard/", views.discard, name="discard"),
]
