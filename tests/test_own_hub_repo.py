"""A Hub repository the same file creates or uploads to is the run's own output, not
an outsider's download (engine/inputs.py `_own_hub_repo`): at default settings the
pickle loads of what the test put there are hidden, the others stay."""

from __future__ import annotations

import json
from pathlib import Path

from torchreview.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "security" / "TR103_own_hub_repo.py"


def _lines(capsys, *argv) -> dict[int, str]:
    main(["check", str(FIXTURE), "--format", "json", "--no-cache", *argv])
    # each place (one message repeated in a file is one finding with related places)
    return {p["line"]: f["confidence"] for f in json.loads(capsys.readouterr().out)["findings"]
            if f["code"] == "TR103" for p in (f, *f.get("related", ()))}


def test_own_repo_round_trip_is_hidden_by_default(capsys):
    assert _lines(capsys) == {33: "high", 39: "high"}


def test_own_repo_round_trip_is_no_download(capsys):
    assert _lines(capsys, "--select", "TR103") == {19: "medium", 26: "medium", 33: "high", 39: "high"}
