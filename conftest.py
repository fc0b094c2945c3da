"""Repository-wide pytest set-up: the real-CLI fixtures for pao's and its plugins' tests."""

pytest_plugins = ["pao_core.testing.pytest_plugin"]
