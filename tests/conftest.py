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
