"""One problem, one finding (engine/merge.py): same root cause at one place, and
the same root cause repeated across a project."""

from __future__ import annotations

import json

from torchreview.engine.merge import merge_findings
from torchreview.engine.runner import Settings, run_review
from torchreview.findings import Edit, Fix
from torchreview.report import render

LOAD = "import torch\nstate = torch.load('m.pt')\n"


def _review(tmp_path, files: dict[str, str], codes: tuple[str, ...]):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return run_review([str(tmp_path)], Settings(rule_codes=codes, jobs=1))


def test_aspects_of_one_call_are_one_finding_with_related_locations(tmp_path):
    report = _review(tmp_path, {"a.py": LOAD}, ("TR102", "TR409"))
    assert [f.code for f in report.findings] == ["TR102"]
    lead = report.findings[0]
    assert [r.code for r in lead.related] == ["TR409"]
    assert "Also TR409" in lead.message and "map_location" in lead.message
    # both insertions at the end of the call survive in one fix
    assert lead.fix is not None
    content = "".join(e.content for e in lead.fix.edits)
    assert "weights_only=True" in content and "map_location" in content
    sarif = json.loads(render(report, "sarif"))
    result = sarif["runs"][0]["results"][0]
    assert result["relatedLocations"][0]["message"]["text"].startswith("TR409:")
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 2
    data = json.loads(render(report, "json"))
    assert data["findings"][0]["related"][0]["code"] == "TR409"


def test_select_of_one_rule_still_reports_it(tmp_path):
    report = _review(tmp_path, {"a.py": LOAD}, ("TR409",))
    assert [(f.code, f.related) for f in report.findings] == [("TR409", ())]


def test_unpinned_repository_is_one_finding_per_repository(tmp_path):
    hub = ("import torch\n"
           "a = torch.hub.load('org/repo:main', 'a')\n"
           "b = torch.hub.load('org/repo:main', 'b')\n"
           "c = torch.hub.load('other/repo', 'c')\n")
    report = _review(tmp_path, {"a.py": hub, "b.py": "import torch\nm = torch.hub.list('org/repo:main')\n"},
                     ("TR104",))
    # (the other repository, loaded the same way in the same file, is that habit again: a place of it)
    assert len(report.findings) == 1
    first = report.findings[0]
    assert "org/repo:main" in first.message
    assert len(first.related) == 3 and "same in 3 more places" in first.message
    assert {r.path.rsplit("/", 1)[-1] for r in first.related} == {"a.py", "b.py"}


def test_deprecation_nits_are_one_summary_per_project_and_severity(tmp_path):
    old = "import torch\nx = torch.FloatTensor(3)\ny = torch.FloatTensor(4)\n"
    report = _review(tmp_path, {"a.py": old, "b.py": old}, ("TR431",))
    assert len(report.findings) == 1
    assert len(report.findings[0].related) == 3


def test_different_projects_are_not_merged(tmp_path):
    for name in ("p1", "p2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "setup.py").write_text("")
        (tmp_path / name / "a.py").write_text("import torch\nx = torch.FloatTensor(3)\n")
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR431",), jobs=1))
    assert len(report.findings) == 2 and not any(f.related for f in report.findings)


def test_overlapping_fixes_keep_only_the_lead_fix():
    from torchreview.catalog import rule_by_code

    rules = rule_by_code()
    a = rules["TR102"].make_finding(path="x.py", line=1, column=1, message="a",
                                    fix=Fix("unsafe", (Edit(1, 1, 1, 5, "A"),), "a"))
    b = rules["TR409"].make_finding(path="x.py", line=1, column=1, message="b",
                                    fix=Fix("unsafe", (Edit(1, 3, 1, 8, "B"),), "b"))
    merged = merge_findings([a, b])
    assert len(merged) == 1 and merged[0].fix.edits == (Edit(1, 1, 1, 5, "A"),)


def test_a_defect_leads_the_advice_it_is_merged_with():
    from torchreview.catalog import rule_by_code

    rules = rule_by_code()
    advice = rules["TR206"].make_finding(path="x.py", line=3, column=5, message="amp", kind="advice")
    defect = rules["TR405"].make_finding(path="x.py", line=3, column=5, message="seed", kind="likely-defect")
    merged = merge_findings([advice, defect])
    assert [(f.code, [r.code for r in f.related]) for f in merged] == [("TR405", ["TR206"])]


def test_a_notebook_copy_of_a_module_line_is_the_module_finding(tmp_path):
    # fixture project TR102_notebook_copy_of_module: the notebook repeats the
    # package's load line (other spacing, a comment): one finding, the module's
    from pathlib import Path

    root = Path(__file__).parent / "fixtures" / "project" / "TR102_notebook_copy_of_module"
    report = run_review([str(root)], Settings(rule_codes=("TR102",), jobs=1))
    shown = sorted((f.path.rsplit("/", 1)[-1], f.cell, f.line) for f in report.findings)
    assert shown == [("models.py", None, 16), ("walkthrough.ipynb", 3, 1)]
    lead = next(f for f in report.findings if f.path.endswith("models.py"))
    assert [(r.path.rsplit("/", 1)[-1], r.cell, r.line) for r in lead.related] == [("walkthrough.ipynb", 2, 12)]
    assert "the same line in" in lead.message and "walkthrough.ipynb:cell 2:12" in lead.message


def test_notebook_copies_fold_only_into_the_same_rule_of_the_same_project(tmp_path):
    line = "state = torch.load('m.pt')"
    nb = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                "source": ["import torch\n", line]}],
                     "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    (tmp_path / "one" / "a.py").write_text(LOAD)
    (tmp_path / "one" / "walk.ipynb").write_text(nb)
    (tmp_path / "two" / "walk.ipynb").write_text(nb)  # another project: its own finding
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR102", "TR409"), jobs=1))
    places = sorted((f.path.replace(str(tmp_path), "").lstrip("/"), f.code, len(f.related)) for f in report.findings)
    # in `one` the notebook's TR102 and TR409 fold into a.py's (merged there into one finding)
    assert [p for p in places if p[0].startswith("one")] == [("one/a.py", "TR102", 3)]
    assert [p[0] for p in places if p[0].startswith("two")] == ["two/walk.ipynb"]


DOUBLE_SOFTMAX = '''\
import torch
from torch import nn

classifier = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
task_loss = nn.CrossEntropyLoss()


def step(a, b, y):
    pred = classifier(a)
    both = (task_loss(pred, y) + task_loss(classifier(b), y)) / 2
    again = task_loss(classifier(a), y)
    return both + again
'''


def test_one_rule_twice_on_one_line_is_one_finding(tmp_path):
    report = _review(tmp_path, {"gan.py": DOUBLE_SOFTMAX}, ("TR411",))
    got = [(f.code, f.line, len(f.related)) for f in report.findings]
    # the two calls of line 10 are one comment; line 11 is another place, another finding
    assert got == [("TR411", 10, 1), ("TR411", 11, 0)]
    lead = report.findings[0]
    assert lead.related[0].line == 10 and lead.related[0].column > lead.column
    assert "same again on this line, column" in lead.message


def test_a_cell_copied_within_one_notebook_is_one_finding(tmp_path):
    """peft multitask_prompt_tuning.ipynb: the training loop of cell 6 copied into cell 11
    for the target task, both without zero_grad (the second judged a repeat): one finding
    on the first cell, the copy a related location. Another notebook keeps its own."""
    loop = ["import torch\n", "for batch in train_:\n", "    loss = model(**batch).loss\n",
            "    loss.backward()\n", "    optimizer.step()\n"]
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}
             for src in (["import torch\n", "model = torch.nn.Linear(2, 2)\n",
                          "optimizer = torch.optim.AdamW(model.parameters())\n"], loop, ["print(1)\n"], loop)]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for folder, name in (("ch1", "a.ipynb"), ("ch2", "b.ipynb")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(json.dumps(doc))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR401",), jobs=1))
    got = sorted((f.path.rsplit("/", 2)[-2], f.cell, f.line, [(r.cell, r.line) for r in f.related])
                 for f in report.findings)
    assert got == [("ch1", 2, 2, [(4, 2)]), ("ch2", 2, 2, [(4, 2)])]


def test_one_message_in_sibling_notebooks_is_one_finding(tmp_path):
    """Modern-Computer-Vision Chapter02: four lesson notebooks of one folder copy the same
    training cell (`loss_history.append(loss_value)`; three judged repeats of the first):
    one finding, the other notebooks related places. A notebook of another folder keeps its
    own; two scripts repeating one line with one message are one finding."""
    cell = ["import torch\n", "model = torch.nn.Linear(2, 1)\n", "opt = torch.optim.SGD(model.parameters())\n",
            "loader = torch.utils.data.DataLoader(torch.randn(8, 2), batch_size=2)\n", "history = []\n",
            "for x in loader:\n", "    opt.zero_grad()\n", "    loss = model(x).sum()\n", "    loss.backward()\n",
            "    opt.step()\n", "    history.append(loss)\n"]
    doc = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                      "source": cell}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for name in ("ch2/one.ipynb", "ch2/two.ipynb", "ch3/three.ipynb"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(json.dumps(doc))
    for name in ("one.py", "two.py"):
        (tmp_path / "scripts").mkdir(exist_ok=True)
        (tmp_path / "scripts" / name).write_text("".join(cell).replace("history", "losses"))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR507",), jobs=1))
    got = sorted((f.path.split(str(tmp_path))[-1], [r.path.rsplit("/", 1)[-1] for r in f.related])
                 for f in report.findings)
    # the two scripts repeat one line with one message: one finding for both (engine/merge.py)
    assert got == [("/ch2/one.ipynb", ["two.ipynb"]), ("/ch3/three.ipynb", []),
                   ("/scripts/one.py", ["two.py"])]


PRIORS = '''import torch


class Profile(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(3))
        self.prior = torch.ones(3)

    def forward(self, x):
        return x * self.weight + self.prior


class Factor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(3))
        self.prior = torch.ones(3)

    def forward(self, x):
        return x * self.weight - self.prior


class Other(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(3))
        self.scale = torch.ones(3)

    def forward(self, x):
        return x * self.weight * self.scale
'''


def test_one_message_repeated_in_one_file_is_one_finding(tmp_path):
    """pyro contrib/mue: the same `self.indel_prior` pattern in two classes of one module (the
    second judged a repeat): one finding, the other class a related location. Another
    attribute of a third class is the same habit in the same file: a related location too. The
    same line of code with the same message in another file of the project is that finding
    again (a related location)."""
    report = _review(tmp_path, {"models.py": PRIORS, "more.py": PRIORS.split("class Factor")[0]}, ("TR511",))
    got = sorted((f.path.rsplit("/", 1)[-1], f.line, sorted((r.path.rsplit("/", 1)[-1], r.line) for r in f.related))
                 for f in report.findings)
    assert got == [("models.py", 8, [("models.py", 18), ("models.py", 28), ("more.py", 8)])]


def test_one_finding_in_copies_of_one_file(tmp_path):
    """Practical_DL: `gans/models/StyleGAN2/weights_deformations.py` copied into the week folders
    of two course parts, the same TR511 finding in both (the second judged a repeat): one
    finding. A file of another name with the same line and message is a repeat too."""
    for folder in ("part1", "part2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "models.py").write_text(PRIORS.split("class Factor")[0])
    (tmp_path / "part2" / "other.py").write_text(PRIORS.split("class Factor")[0])
    report = _review(tmp_path, {}, ("TR511",))
    got = sorted((f.path.split(str(tmp_path))[-1], [r.path.split(str(tmp_path))[-1] for r in f.related])
                 for f in report.findings)
    assert got == [("/part1/models.py", ["/part2/models.py", "/part2/other.py"])]


def test_many_findings_at_one_place_are_counted_not_listed():
    """An archive's members are all reported at its start (llmtime's zipped result pickles: the
    merged message listed "columns 1, 1, 1, ..." hundreds of times); a long list of distinct
    columns is cut after six."""
    from dataclasses import replace as _replace

    from torchreview.engine.merge import _merge_line
    from torchreview.findings import Finding, Severity

    base = Finding(code="TR108", name="x", severity=Severity.MEDIUM, category="security", review=("SR",),
                   path="a.zip", line=1, column=1, end_line=1, end_column=1, message="member needs trust")
    same = _merge_line([base] + [base] * 300)
    assert same.message.endswith("(300 more like it here)") and len(same.related) == 300
    spread = _merge_line([base] + [_replace(base, column=c) for c in range(2, 12)])
    assert spread.message.endswith("columns 2, 3, 4, 5, 6, 7, ... (10 in all))")
