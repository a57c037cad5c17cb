"""Model concept: data splits of loaders, datasets and metrics (the unit tests of
flow_splits itself are tests/test_flow_splits.py; these are the concept's contract)."""

from __future__ import annotations

import ast

from torchreview.engine.context import split_of_words, words

from model_snippets import ctx_of, node


def test_words_and_their_split():
    assert words("valLoss") == ["val", "loss"]
    assert split_of_words("test_loader") == "test"
    assert split_of_words("train_ds") == "train"
    assert split_of_words("value_head") is None  # near-miss: "value" is not a validation split


def test_how_a_dataset_is_built_wins_over_its_name():
    ctx = ctx_of("""
        import torchvision
        from torch.utils.data import DataLoader
        train_loader = DataLoader(torchvision.datasets.MNIST(".", train=False))
        other = DataLoader(torchvision.datasets.MNIST(".", train=True))
        train_loader, other
    """)
    built_test, built_train = node(ctx, "train_loader, other", ast.Tuple).elts
    assert ctx.flow.data_split(built_test) == "test"
    assert ctx.flow.data_split(built_train) == "train"


def test_the_split_a_metric_was_computed_on():
    ctx = ctx_of("""
        def evaluate(model, loader):
            return sum(1 for _ in loader) * 0.5
        def main(model, test_loader):
            acc = evaluate(model, test_loader)
            acc
    """)
    split, evidence = ctx.flow.metric_split(node(ctx, "acc", ast.Name))
    assert split == "test" and ctx.text(evidence) == "test_loader"
    # a function that never reads the loader it is handed computes nothing on that split
    ctx = ctx_of("""
        def evaluate(model, loader):
            return 0.5
        def main(model, test_loader):
            acc = evaluate(model, test_loader)
            acc
    """)
    assert ctx.flow.metric_split(node(ctx, "acc", ast.Name))[0] is None
