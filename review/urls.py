from django.urls import path

from review.views import (
    auto_accept,
    blind,
    dashboard,
    jobs,
    product_values,
    queue,
    settings,
    values,
    versions,
)

app_name = "review"
urlpatterns = [
    path("queue/", queue.queue, name="queue"),
    path("values/<int:value_id>/", values.row, name="row"),
    path("values/<int:value_id>/review/", values.review_value, name="review_value"),
    path("values/<int:value_id>/history/", values.history, name="history"),
    path("values/<int:value_id>/in-place/", product_values.review_in_place, name="review_in_place"),
    path("undo/", values.undo, name="undo"),
    path("bulk/", jobs.start_bulk, name="bulk"),
    path("bulk/<int:job_id>/", jobs.bulk_status, name="bulk_status"),
    path("auto-accept/", auto_accept.auto_accept, name="auto_accept"),
    path("auto-accept/start/", auto_accept.start_auto_accept, name="start_auto_accept"),
    path("export/", jobs.start_export, name="export"),
    path("export/<int:job_id>/", jobs.export_status, name="export_status"),
    path("export/<int:job_id>/download/", jobs.export_download, name="export_download"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("gold.jsonl", dashboard.gold_download, name="gold_download"),
    path("settings/", settings.reviewer_settings, name="settings"),
    path("versions/scores/", versions.version_scores, name="version_scores"),
    path("blind/", blind.blind_start, name="blind_start"),
    path("blind/label/", blind.blind_label, name="blind_label"),
    path("blind/label/<int:product_id>/", blind.blind_save, name="blind_save"),
]
