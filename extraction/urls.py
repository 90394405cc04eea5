from django.urls import path

from extraction import views

app_name = "extraction"
urlpatterns = [
    path("", views.runs, name="runs"),
    path("new/", views.start, name="start"),
    path("new/count/", views.selection_count, name="selection_count"),
    path("<int:run_id>/", views.detail, name="detail"),
    path("<int:run_id>/progress/", views.progress_partial, name="progress"),
    path("<int:run_id>/cancel/", views.cancel, name="cancel"),
]
