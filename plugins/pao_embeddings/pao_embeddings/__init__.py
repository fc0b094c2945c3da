"""Sentence vectors for pao's memory backends (see ``model`` and ``similar``)."""
