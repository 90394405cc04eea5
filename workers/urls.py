from django.urls import path

from workers import views

app_name = "workers"
urlpatterns = [path("", views.status, name="status")]
