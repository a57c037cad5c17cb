"""The HTML runtime report (``torchreview run --report``): a self-contained page
whose charts and finding markers render in a real browser, and the optional
TensorBoard scalars.

The browser test runs headless Chromium from the system packages
(``apt-get install chromium``; ``.ci/run`` installs it when it can) and reads
the DOM after the page's scripts ran (``--dump-dom``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SCRIPT = """
import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 1)
        self.spare = torch.nn.Linear(4, 1)  # never used: TR603 at the end of the run

    def forward(self, x):
        return self.body(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(1, 41):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if step == 17:
        loss = loss + torch.tensor(float("nan"))  # a NaN term without gradient: TR601 at step 17
    loss.backward()
    opt.step()
    sched.step()
"""


HOVER_PROBE = """<script>
var svg = document.getElementById('chart-loss'), box = svg.getBoundingClientRect();
var middle = box.left + box.width * (70 + (944 - 70) / 2) / 960;  // x of step 20.5 of 1..40
svg.dispatchEvent(new MouseEvent('mousemove', {clientX: middle, clientY: box.top + 40}));
document.body.setAttribute('data-probe', document.getElementById('readout-loss').textContent);
</script>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _parse(page: str) -> list[tuple[str, dict]]:
    parser = _Collect()
    parser.feed(page)
    return parser.tags


@pytest.fixture(scope="module")
def run_page(tmp_path_factory):
    """`torchreview run --report` on a small script, in its own process."""
    tmp = tmp_path_factory.mktemp("report")
    script = tmp / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    page, report = tmp / "run.html", tmp / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torchreview", "run", "--report", str(page), "--format", "json",
         "--output", str(report), str(script)],
        cwd=tmp, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # findings at or above --fail-on low
    assert "Traceback" not in proc.stderr
    return page, json.loads(report.read_text())


def test_page_is_self_contained_with_charts_and_markers(run_page):
    page_path, report = run_page
    page = page_path.read_text()
    assert "://" not in page  # nothing fetched: no URL at all
    tags = _parse(page)
    assert not [a for t, a in tags if t in ("script", "img", "link", "iframe") and
                (a.get("src") or a.get("href"))]
    charts = [a["data-chart"] for t, a in tags if t == "svg" and a.get("class") == "chart"]
    assert charts == ["loss", "grad_norm", "lr", "step_time", "memory"]
    markers = [(a["data-code"], int(a["data-step"])) for t, a in tags
               if t == "a" and a.get("class") == "marker"]
    assert markers.count(("TR601", 17)) == 5 and markers.count(("TR603", 40)) == 5
    # the list below the charts, linked from the markers
    items = [a["id"] for t, a in tags if t == "li" and "finding" in a.get("class", "")]
    assert len(items) == len(report["findings"]) == len(report["runtime"]["markers"])
    # the page's data is the JSON report's series
    data = json.loads(re.search(r'<script type="application/json" id="series-data">(.*?)'
                                r"</script>", page, re.S).group(1))
    assert data["lr"]["learning rate"]["value"] == report["runtime"]["series"]["lr"]["value"]


def test_page_renders_in_headless_chromium(run_page, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary (apt-get install chromium; .ci/run installs it when "
                    "apt-get is available)")
    page, _ = run_page
    # a copy whose extra script moves the mouse over the middle of the loss chart
    # and copies the hover read-out into the DOM
    probe = tmp_path / "probe.html"
    probe.write_text(Path(page).read_text().replace("</body>", HOVER_PROBE + "</body>"))
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000",
           "--dump-dom", probe.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path)})
    dom = proc.stdout
    assert "<svg" in dom, proc.stderr[-2000:]
    tags = _parse(dom)
    body = next(a for t, a in tags if t == "body")
    assert body.get("data-hover") == "ready"  # the inline script ran and read the data
    assert re.fullmatch(r"step (19|2[0-2])  ·  loss \d\S*", body.get("data-probe", "")), body
    charts = [a for t, a in tags if t == "svg" and a.get("class") == "chart"]
    assert len(charts) == 5
    lines = [a for t, a in tags if t == "polyline" and a.get("data-series")]
    assert {a["data-series"] for a in lines} >= {"loss", "grad_norm", "lr", "rss"}
    assert all(len(a["points"].split()) >= 2 for a in lines)
    bands = [a for t, a in tags if t == "polygon" and "band" in a.get("class", "")]
    assert len(bands) == 4  # data wait, forward+backward, optimizer, other
    markers = {(a["data-code"], a["data-step"]) for t, a in tags
               if t == "a" and a.get("class") == "marker"}
    assert {("TR601", "17"), ("TR603", "40")} <= markers


def test_tensorboard_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    import torchreview

    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 3)
    logdir = tmp_path / "tb"
    with torchreview.watch(live=False, write_report=False, tensorboard=str(logdir)) as watcher:
        for _ in range(6):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    events = EventAccumulator(str(logdir))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"torchreview/loss", "torchreview/grad_norm", "torchreview/lr",
            "torchreview/step_time/data_wait_ms", "torchreview/memory/rss_mb"} <= set(tags)
    loss = events.Scalars("torchreview/loss")
    assert [e.step for e in loss] == list(range(1, 7))
    expected = watcher.report.runtime["series"]["loss"]["value"]
    assert [e.value for e in loss] == pytest.approx(expected, rel=1e-6)


def test_tensorboard_missing_is_one_line(tmp_path, monkeypatch):
    import io

    import torchreview

    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as if not installed
    stream = io.StringIO()
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchreview.watch(live=False, write_report=False, tensorboard=str(tmp_path / "tb"),
                           stream=stream):
        for _ in range(2):
            opt.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
    assert stream.getvalue() == (f"torchreview: cannot write TensorBoard scalars to "
                                 f"{tmp_path / 'tb'}: the tensorboard package is not installed "
                                 "(pip install tensorboard)\n")
