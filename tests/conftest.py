"""Fixtures every pao test shares (:mod:`pao_testing.homes`): an isolated home for pao and the user, and a CLI runner."""

from pao_testing.homes import isolated_home, pao, pao_config_file  # noqa: F401  (fixtures)
