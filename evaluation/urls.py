from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("my_campaigns/", views.my_campaigns, name="my_campaigns"),
    path("campaigns/new/", views.campaign_new, name="campaign_new"),
    path("systems/import/", views.system_import, name="system_import"),
    path("campaigns/<int:pk>/status/", views.campaign_status, name="campaign_status"),
    path("campaigns/<int:pk>/rate/", views.rate, name="rate"),
    path("campaigns/<int:pk>/vote/", views.vote, name="vote"),
    path("campaigns/<int:pk>/results/", views.results, name="results"),
    path("campaigns/<int:pk>/votes.csv", views.export_votes, name="export_votes"),
]
