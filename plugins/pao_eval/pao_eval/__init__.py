"""pao-eval: ``pao eval CORPUS_DIR``, measured briefing quality on a labelled corpus.

Each memory plugin loads the corpus into its throwaway store (``pao_load_corpus``);
:mod:`pao_eval.evaluate` briefs every query through pao_core's own pipeline and scores
the briefings against the corpus's labels.
"""
