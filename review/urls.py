from django.urls import path

from accounts.placeholder import not_built_yet

app_name = "review"
urlpatterns = [
    path("queue/", not_built_yet, name="queue"),
    path("dashboard/", not_built_yet, name="dashboard"),
]
