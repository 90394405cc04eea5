from django.urls import path

from accounts.placeholder import not_built_yet

app_name = "evaluation"
urlpatterns = [
    path("my_campaigns/", not_built_yet, name="my_campaigns"),
]
