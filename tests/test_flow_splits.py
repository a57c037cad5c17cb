"""Flow.data_split / Flow.metric_split: which data split a loader, dataset or metric comes from."""

from __future__ import annotations

import ast
import textwrap

from torchreview.engine.context import FileContext
from torchreview.engine.model.splits import split_of_words
from torchreview.engine.source import SourceFile


def ctx_of(code: str) -> FileContext:
    text = textwrap.dedent(code)
    return FileContext(SourceFile(path="m.py", text=text), ast.parse(text), target_torch=None, has_torch=True)


def last_use(ctx, ident):
    return [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == ident
            and isinstance(n.ctx, ast.Load)][-1]


def test_words_name_the_split_and_refuse_to_guess():
    assert split_of_words("test_loader") == "test"
    assert split_of_words("testloader") == "test"
    assert split_of_words("X_te") == "test"
    assert split_of_words("valDataset") == "val"
    assert split_of_words("dev_set") == "val"
    assert split_of_words("train_ds") == "train"
    assert split_of_words("latest_acc") is None  # "latest" is not "test"
    assert split_of_words("values") is None  # nor is "values" a validation split
    assert split_of_words("device") is None
    assert split_of_words("train_val_loader") is None  # mixed: do not guess


def test_building_wins_over_naming():
    ctx = ctx_of("""
        import torchvision
        from torch.utils.data import DataLoader
        val_set = torchvision.datasets.CIFAR10("d", train=False)
        val_loader = DataLoader(val_set)
        valid_loader = DataLoader(torchvision.datasets.CIFAR10("d", train=True))
        hf = load_dataset("imdb", split="test")
        loaders = {}
        use(val_loader, valid_loader, hf, loaders["test"], loaders["val"])
    """)
    flow = ctx.flow
    assert flow.data_split(last_use(ctx, "val_loader")) == "test"  # CIFAR10(train=False) is the test split
    assert flow.data_split(last_use(ctx, "valid_loader")) == "val"
    assert flow.data_split(last_use(ctx, "hf")) == "test"
    call = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "use"][0]
    assert flow.data_split(call.args[3]) == "test"
    assert flow.data_split(call.args[4]) == "val"


def test_metric_takes_the_split_it_was_computed_on():
    ctx = ctx_of("""
        def evaluate(model, loader):
            return sum(1 for _ in loader) * 0.0

        def run(model, test_loader, val_loader, args):
            loss, acc = evaluate(model, test_loader)
            v = evaluate(model, val_loader)
            o = evaluate(model, val_loader, args.test_time_aug)
            correct = 0
            for x, y in test_loader:
                correct += 1
            ratio = 100.0 * correct / 10
            report(acc, v, o, ratio)
    """)
    flow = ctx.flow
    report = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "report"][0]
    acc, v, o, ratio = report.args
    assert flow.metric_split(acc, report)[0] == "test"
    assert flow.metric_split(v, report)[0] == "val"
    assert flow.metric_split(o, report)[0] == "val"  # a test-time option is not the data evaluated
    split, evidence = flow.metric_split(ratio, report)
    assert split == "test" and ast.unparse(evidence) == "test_loader"
