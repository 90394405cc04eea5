from django.urls import path

from accounts.placeholder import not_built_yet

app_name = "extraction"
urlpatterns = [
    path("runs/", not_built_yet, name="runs"),
]
