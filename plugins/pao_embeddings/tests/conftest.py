"""Fixtures of the pao-embeddings tests: an isolated home for every test (:mod:`pao_testing.homes`)."""

from pao_testing.homes import isolated_home, pao, pao_config_file  # noqa: F401  (fixtures)
