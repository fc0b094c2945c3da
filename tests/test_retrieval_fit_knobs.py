"""benches/retrieval_fit.py's knobs reach the code that searches, whatever was imported first."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_each_setting_reaches_both_stores_searches() -> None:
    sys.path.insert(0, str(ROOT / "benches"))
    try:
        import retrieval_fit
    finally:
        sys.path.remove(str(ROOT / "benches"))
    from pao_historyworker import backend
    from pao_postgres.searcher import retrieval

    for longterm_floor, history_floor in ((0.44, 0.31), (0.6, 0.45)):
        with retrieval_fit.knobs(longterm_floor, history_floor):
            assert backend.Tuning(semantic=True).vector_floor == history_floor
            assert retrieval.METHODS["ranked"].vector_floor == longterm_floor
    assert backend.Tuning().vector_floor == retrieval_fit.shipped()["history_vector_floor"]
