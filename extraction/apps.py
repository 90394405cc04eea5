from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"
