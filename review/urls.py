from django.urls import path

from review.views import dashboard, jobs, queue, settings, values

app_name = "review"
urlpatterns = [
    path("queue/", queue.queue, name="queue"),
    path("values/<int:value_id>/", values.row, name="row"),
    path("values/<int:value_id>/review/", values.review_value, name="review_value"),
    path("values/<int:value_id>/history/", values.history, name="history"),
    path("undo/", values.undo, name="undo"),
    path("bulk/", jobs.start_bulk, name="bulk"),
    path("bulk/<int:job_id>/", jobs.bulk_status, name="bulk_status"),
    path("export/", jobs.start_export, name="export"),
    path("export/<int:job_id>/", jobs.export_status, name="export_status"),
    path("export/<int:job_id>/download/", jobs.export_download, name="export_download"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("gold.jsonl", dashboard.gold_download, name="gold_download"),
    path("settings/", settings.reviewer_settings, name="settings"),
]
