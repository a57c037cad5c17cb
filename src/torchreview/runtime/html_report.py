"""The runtime report as one self-contained HTML page (``torchreview run --report``).

Charts are inline SVG drawn here (no chart library, nothing fetched): loss,
gradient norm, learning rate, step time split into data wait / forward +
backward / optimizer / other, and memory, all over optimizer steps.  Every
finding is a marker on each chart's timeline at the step where it was first
seen (its message is the marker's tooltip, and it links to the list of
findings below the charts).  A few lines of inline JavaScript show the values
under the mouse; without JavaScript the page loses only that.
"""

from __future__ import annotations

import json
import math
from html import escape

from torchreview.report import Report

WIDTH, HEIGHT = 960, 190
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 30, 24
_MB = 1024 * 1024

SEVERITY_COLOR = {"critical": "#a50026", "high": "#d73027", "medium": "#f46d43",
                  "low": "#4575b4"}
STEP_PARTS = (("data_wait", "data wait", "#e45756"),
              ("forward_backward", "forward + backward", "#4c78a8"),
              ("optimizer", "optimizer", "#72b7b2"),
              ("other", "other (logging, eval, syncs)", "#bab0ac"))


# -- scales ------------------------------------------------------------------------------
def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e5 or magnitude < 1e-3:
        return f"{value:.1e}"
    if magnitude >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


class Axis:
    """Maps data values to pixels (linear, or log10 when ``log``)."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool = False):
        self.log = log
        if log:
            low, high = math.log10(low), math.log10(high)
        if high <= low:
            pad = abs(low) * 0.1 or 1.0
            low, high = low - pad, high + pad
        self.low, self.high, self.start, self.end = low, high, start, end

    def __call__(self, value: float) -> float:
        if self.log:
            value = math.log10(max(value, 1e-300))
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            exponents = [e for e in range(math.floor(self.low), math.ceil(self.high) + 1)
                         if self.low - 1e-9 <= e <= self.high + 1e-9]
            every = max(1, math.ceil(len(exponents) / 6))
            return [10.0 ** e for e in exponents if e % every == 0]
        return nice_ticks(self.low, self.high)


# -- one chart ----------------------------------------------------------------------------
class Chart:
    def __init__(self, key: str, title: str, unit: str, x0: int, x1: int) -> None:
        self.key, self.title, self.unit = key, title, unit
        self.x = Axis(x0, max(x1, x0 + 1), LEFT, WIDTH - RIGHT)
        self.parts: list[str] = []
        self.legend: list[tuple[str, str]] = []
        self.hover: dict[str, dict] = {}  # name -> {"step": [...], "value": [...]} for the JS

    def y_axis(self, values: list[float], *, log: bool = False, floor_zero: bool = False,
               top: float | None = None) -> Axis:
        finite = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        low = min(finite) if finite else 0.0
        high = top if top is not None else (max(finite) if finite else 1.0)
        if floor_zero:
            low = min(0.0, low)
        y = Axis(low, high, HEIGHT - BOTTOM, TOP, log=log and low > 0)
        grid = []
        for tick in y.ticks():
            py = y(tick)
            grid.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py:.1f}" '
                        f'y2="{py:.1f}"/><text class="tick" x="{LEFT - 6}" y="{py + 4:.1f}" '
                        f'text-anchor="end">{escape(_fmt(tick))}</text>')
        self.parts[:0] = grid
        return y

    def line(self, name: str, label: str, color: str, steps: list[int], values: list,
             y: Axis) -> None:
        segments, current = [], []
        for s, v in zip(steps, values):
            if v is None or not math.isfinite(v) or (y.log and v <= 0):
                if current:
                    segments.append(current)
                current = []
                continue
            current.append(f"{self.x(s):.1f},{y(v):.1f}")
        if current:
            segments.append(current)
        for points in segments:
            if len(points) == 1:
                px, py = points[0].split(",")
                self.parts.append(f'<circle class="series" cx="{px}" cy="{py}" r="2" '
                                  f'fill="{color}"/>')
            else:
                self.parts.append(f'<polyline class="series" data-series="{name}" '
                                  f'fill="none" stroke="{color}" stroke-width="1.5" '
                                  f'points="{" ".join(points)}"/>')
        bad = [s for s, v in zip(steps, values) if v is None]
        for s in bad[:200]:  # NaN/Inf values: a red tick at the bottom
            px = self.x(s)
            self.parts.append(f'<line class="nonfinite" x1="{px:.1f}" x2="{px:.1f}" '
                              f'y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM - 8}" '
                              f'stroke="#d73027" stroke-width="2"><title>step {s}: NaN/Inf'
                              f'</title></line>')
        self.legend.append((label, color))
        self.hover[label] = {"step": steps, "value": values}

    def stacked(self, steps: list[int], bands: list[tuple[str, str, list[float]]],
                y: Axis, top: float) -> None:
        base = [0.0] * len(steps)
        for label, color, values in bands:
            upper = [b + (v or 0.0) for b, v in zip(base, values)]
            pts = [f"{self.x(s):.1f},{y(min(u, top)):.1f}" for s, u in zip(steps, upper)]
            pts += [f"{self.x(s):.1f},{y(min(b, top)):.1f}"
                    for s, b in zip(reversed(steps), reversed(base))]
            self.parts.append(f'<polygon class="series band" fill="{color}" fill-opacity="0.85" '
                              f'stroke="none" points="{" ".join(pts)}"/>')
            self.legend.append((label, color))
            self.hover[label] = {"step": steps, "value": values}
            base = upper
        for s, total in zip(steps, base):  # steps cut off at the top of the chart
            if total > top:
                px = self.x(s)
                self.parts.append(f'<path class="clipped" d="M{px - 3:.1f},{TOP + 5} '
                                  f'L{px + 3:.1f},{TOP + 5} L{px:.1f},{TOP} Z" fill="#555">'
                                  f'<title>step {s}: {total * 1000:.1f} ms (off the scale)'
                                  f'</title></path>')

    def markers(self, markers: list[tuple[int, dict]]) -> None:
        label_end = [-1e9, -1e9]  # right end of the last code label in each of two rows
        for index, m in sorted(markers, key=lambda im: (im[1]["step"], im[0])):
            px = self.x(m["step"])
            width = 7 * len(m["code"])
            left = px + 7 if px + 7 + width <= WIDTH else px - 7 - width  # flip at the right edge
            row = 0 if left - 4 > label_end[0] else 1 if left - 4 > label_end[1] else None
            label = ""
            if row is not None:
                label_end[row] = left + width
                ly = TOP - 17 + 9 * row
                label = (f'<text class="mlabel" x="{left:.1f}" y="{ly}" '
                         f'fill="{SEVERITY_COLOR.get(m["severity"], "#666")}">'
                         f'{escape(m["code"])}</text>')
            color = SEVERITY_COLOR.get(m["severity"], "#666")
            when = "found at the end of the run" if m["at_end"] else f"step {m['step']}"
            tip = escape(f"{m['code']} ({m['severity']}, {when}): {m['message']}")
            self.parts.append(
                f'<a href="#finding-{index}" class="marker" data-code="{escape(m["code"])}" '
                f'data-step="{m["step"]}"><title>{tip}</title>'
                f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                f'stroke="{color}" stroke-width="1.2" stroke-dasharray="4 3"/>'
                f'<circle cx="{px:.1f}" cy="{TOP}" r="5" fill="{color}"/>{label}</a>')

    def svg(self) -> str:
        x = self.x
        ticks = []
        for tick in nice_ticks(x.low, x.high, 8):
            if tick != int(tick):
                continue
            px = x(tick)
            ticks.append(f'<line class="axis" x1="{px:.1f}" x2="{px:.1f}" y1="{HEIGHT - BOTTOM}" '
                         f'y2="{HEIGHT - BOTTOM + 4}"/><text class="tick" x="{px:.1f}" '
                         f'y="{HEIGHT - 6}" text-anchor="middle">{int(tick)}</text>')
        frame = (f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
                 f'height="{HEIGHT - TOP - BOTTOM}"/>')
        return (f'<svg class="chart" id="chart-{self.key}" data-chart="{self.key}" '
                f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
                f'data-x0="{x.low}" data-x1="{x.high}" data-left="{LEFT}" '
                f'data-right="{WIDTH - RIGHT}" role="img" aria-label="{escape(self.title)}">'
                f'{frame}{"".join(self.parts)}{"".join(ticks)}'
                f'<line class="cursor" x1="0" x2="0" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                f'visibility="hidden"/></svg>')

    def html(self) -> str:
        legend = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(label)}</span>'
                         for label, c in self.legend)
        return (f'<section class="panel"><h2>{escape(self.title)} '
                f'<small>{escape(self.unit)}</small></h2><div class="legend">{legend}'
                f'<span class="readout" id="readout-{self.key}"></span></div>{self.svg()}'
                f'</section>')


# -- the page -----------------------------------------------------------------------------
def _series(runtime: dict, name: str) -> tuple[list[int], list]:
    s = runtime.get("series", {}).get(name) or {}
    return list(s.get("step", [])), list(s.get("value", []))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def build_charts(runtime: dict, markers: list[tuple[int, dict]]) -> list[Chart]:
    x1 = max(1, int(runtime.get("steps") or 1))
    charts = []

    steps, loss = _series(runtime, "loss")
    chart = Chart("loss", "Loss", "mean of the step's backward passes", 1, x1)
    chart.line("loss", "loss", "#1f77b4", steps, loss, chart.y_axis(loss))
    charts.append(chart)

    steps, norm = _series(runtime, "grad_norm")
    positive = [v for v in norm if v is not None and v > 0]
    log = bool(positive) and max(positive) / min(positive) > 50
    chart = Chart("grad_norm", "Gradient norm", "total L2 norm before optimizer.step()"
                  + (", log scale" if log else ""), 1, x1)
    chart.line("grad_norm", "gradient norm", "#9467bd", steps, norm,
               chart.y_axis(norm, log=log))
    charts.append(chart)

    steps, lr = _series(runtime, "lr")
    chart = Chart("lr", "Learning rate", "first parameter group of the stepping optimizer", 1, x1)
    chart.line("lr", "learning rate", "#2ca02c", steps, lr, chart.y_axis(lr, floor_zero=True))
    charts.append(chart)

    steps, _ = _series(runtime, "data_wait")
    bands = [(label, color, _series(runtime, key)[1]) for key, label, color in STEP_PARTS]
    totals = [sum(v or 0.0 for v in vals) for vals in zip(*(b[2] for b in bands))] or [0.0]
    top = max(1e-6, _percentile(totals, 0.98) * 1.15)  # a rare slow step must not flatten the rest
    chart = Chart("step_time", "Step time", "milliseconds per optimizer step (host clock)", 1, x1)
    y = chart.y_axis([0.0, top * 1000], floor_zero=True)
    chart.stacked(steps, [(label, color, [v * 1000 for v in vals])
                          for label, color, vals in bands], y, top * 1000)
    charts.append(chart)

    steps, rss = _series(runtime, "rss")
    cuda_steps, cuda = _series(runtime, "cuda_allocated")
    rss_mb = [v / _MB if v is not None else None for v in rss]
    cuda_mb = [v / _MB if v is not None else None for v in cuda]
    chart = Chart("memory", "Memory", "MB after each step", 1, x1)
    y = chart.y_axis(rss_mb + cuda_mb, floor_zero=False)
    chart.line("rss", "process RSS", "#f58518", steps, rss_mb, y)
    if cuda_steps:
        chart.line("cuda_allocated", "CUDA allocated", "#54a24b", cuda_steps, cuda_mb, y)
    charts.append(chart)

    for chart in charts:
        chart.markers(markers)
    return charts


def _summary(runtime: dict, report: Report) -> str:
    rows = [("optimizer steps", str(runtime.get("steps", 0))),
            ("wall time", f"{runtime.get('seconds', report.seconds):.1f} s"),
            ("device", runtime.get("device", "cpu"))]
    parts = {key: [v for v in _series(runtime, key)[1] if v is not None]
             for key, _, _ in STEP_PARTS}
    total = sum(sum(v) for v in parts.values())
    count = len(parts["data_wait"])
    if count and total > 0:
        rows.append(("mean step time", f"{total / count * 1000:.2f} ms"))
        rows.append(("split", ", ".join(f"{label} {sum(parts[key]) / total:.0%}"
                                         for key, label, _ in STEP_PARTS)))
    loss = [v for v in _series(runtime, "loss")[1] if v is not None]
    if loss:
        rows.append(("loss (first, last)", f"{_fmt(loss[0])}, {_fmt(loss[-1])}"))
    rss = [v for v in _series(runtime, "rss")[1] if v is not None]
    if rss:
        rows.append(("peak RSS", f"{max(rss) / _MB:.0f} MB"))
    cuda = [v for v in _series(runtime, "cuda_allocated")[1] if v is not None]
    if cuda:
        rows.append(("peak CUDA allocated", f"{max(cuda) / _MB:.0f} MB"))
    if runtime.get("stride", 1) > 1:
        rows.append(("sampling", f"every {runtime['stride']} steps (long run thinned)"))
    rows.append(("findings", str(len(report.findings))))
    return "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)


def _finding_list(markers: list[tuple[int, dict]]) -> str:
    if not markers:
        return '<p class="none">No runtime findings.</p>'
    items = []
    for index, m in markers:
        when = "end of run" if m["at_end"] else f"step {m['step']}"
        items.append(
            f'<li id="finding-{index}" class="finding sev-{escape(m["severity"])}">'
            f'<span class="code">{escape(m["code"])}</span> '
            f'<span class="sev">{escape(m["severity"])}</span> '
            f'<span class="when">{escape(when)}</span> '
            f'<span class="where">{escape(m["path"])}:{m["line"]}</span>'
            f'<div class="msg">{escape(m["name"])}: {escape(m["message"])}</div></li>')
    return f'<ol class="findings">{"".join(items)}</ol>'


_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;
 background:#fafafa;max-width:1000px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:0 0 2px}h2 small{font-weight:normal;
 color:#777;font-size:12px}
table.summary{border-collapse:collapse;margin:8px 0 16px}table.summary th{text-align:left;
 color:#555;font-weight:normal;padding:1px 16px 1px 0}
.panel{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px;margin:0 0 12px}
.legend{font-size:12px;color:#444;min-height:18px}.key{margin-right:14px}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
.readout{float:right;color:#000;font-variant-numeric:tabular-nums}
svg.chart{display:block;max-width:100%;height:auto}
.frame{fill:none;stroke:#ccc}.grid{stroke:#eee}.axis{stroke:#999}
.tick{font-size:11px;fill:#666}.cursor{stroke:#333;stroke-width:1}
.marker circle{stroke:#fff;stroke-width:1.5}.mlabel{font-size:10px;font-weight:bold}.marker:hover line{stroke-width:3}
ol.findings{padding-left:22px}.finding{margin:0 0 10px}
.code{font-weight:bold;font-family:ui-monospace,monospace}
.sev{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-size:12px;background:#666}
.sev-critical .sev{background:#a50026}.sev-high .sev{background:#d73027}
.sev-medium .sev{background:#f46d43}.sev-low .sev{background:#4575b4}
.when,.where{color:#666;font-size:12px;margin-left:6px}.where{font-family:ui-monospace,monospace}
.msg{margin-top:2px}.finding:target{background:#fff3c4}
"""

_SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('series-data').textContent);
function near(steps,s){var lo=0,hi=steps.length-1;if(hi<0)return -1;
 while(lo<hi){var m=(lo+hi)>>1;if(steps[m]<s)lo=m+1;else hi=m;}
 if(lo>0&&Math.abs(steps[lo-1]-s)<Math.abs(steps[lo]-s))lo--;return lo;}
function fmt(v){if(v===null||v===undefined)return 'NaN/Inf';var a=Math.abs(v);
 return (a!==0&&(a>=1e5||a<1e-3))?v.toExponential(2):(+v.toPrecision(4)).toString();}
document.querySelectorAll('svg.chart').forEach(function(svg){
 var key=svg.dataset.chart,series=data[key]||{},out=document.getElementById('readout-'+key),
  cur=svg.querySelector('.cursor'),x0=+svg.dataset.x0,x1=+svg.dataset.x1,
  l=+svg.dataset.left,r=+svg.dataset.right;
 svg.addEventListener('mousemove',function(e){
  var box=svg.getBoundingClientRect(),px=(e.clientX-box.left)*svg.viewBox.baseVal.width/box.width;
  if(px<l||px>r){cur.setAttribute('visibility','hidden');out.textContent='';return;}
  var step=Math.round(x0+(px-l)/(r-l)*(x1-x0)),text=['step '+step];
  Object.keys(series).forEach(function(name){var s=series[name],i=near(s.step,step);
   if(i>=0)text.push(name+' '+fmt(s.value[i]));});
  cur.setAttribute('x1',px);cur.setAttribute('x2',px);cur.setAttribute('visibility','visible');
  out.textContent=text.join('  \\u00b7  ');});
 svg.addEventListener('mouseleave',function(){cur.setAttribute('visibility','hidden');
  out.textContent='';});});
document.body.setAttribute('data-hover','ready');
})();
"""


def render_html(report: Report, title: str | None = None) -> str:
    """The whole page for a runtime report (``report.runtime`` holds the series)."""
    runtime = getattr(report, "runtime", None) or {"steps": 0, "series": {}, "markers": []}
    markers = list(enumerate(runtime.get("markers", []), 1))
    charts = build_charts(runtime, markers)
    hover = {c.key: c.hover for c in charts}
    data = json.dumps(hover, separators=(",", ":"), allow_nan=False,
                      default=str).replace("</", "<\\/")
    name = title or "training run"
    errors = "".join(f"<li>{escape(e.path)}: {escape(e.message)}</li>" for e in report.errors)
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>torchreview runtime report: {escape(name)}</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>torchreview runtime report: {escape(name)}</h1>"
        f'<table class="summary">{_summary(runtime, report)}</table>'
        + ("" if runtime.get("steps") else
           '<p class="none">No optimizer step ran under review: the charts are empty.</p>')
        + "".join(c.html() for c in charts)
        + f"<h2>Findings</h2>{_finding_list(markers)}"
        + (f'<h2>Review errors</h2><ul class="errors">{errors}</ul>' if errors else "")
        + (f'<ul class="notes">{notes}</ul>' if notes else "")
        + f'<script type="application/json" id="series-data">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
