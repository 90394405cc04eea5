from django.apps import AppConfig


class FilestoreConfig(AppConfig):
    name = "filestore"
    verbose_name = "Stored files"
