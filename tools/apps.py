from django.apps import AppConfig


class ToolsConfig(AppConfig):
    """Test and benchmark tooling: here only for its management commands (no models, no URLs)."""

    name = "tools"
