import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest


@pytest.fixture(autouse=True)
def _review_from_the_test_folder(monkeypatch):
    """Tests run from ``tests/``: the fixture corpus is reviewed as ``fixtures/bugs/...``,
    sample code, not as ``tests/fixtures/...`` (a file under a test suite's folder is test
    code to the reviewer, as in any user's project)."""
    monkeypatch.chdir(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _no_track_record(request, monkeypatch):
    """Tests of other features see the confidence their fixtures' evidence gives: the
    shipped track record (torchreview/track_record.py, data/track_record.json) changes
    whenever the precision sweeps are re-run, and would hide a fixture's finding of a
    capped rule. Tests of the record itself and of the bundled examples (which must
    show what a user sees) are marked ``shipped_track_record``; subprocesses read the
    shipped record (their projects set ``track-record = false`` where needed)."""
    if request.node.get_closest_marker("shipped_track_record"):
        return
    from torchreview import track_record

    monkeypatch.setattr(track_record, "_records", lambda: {})
