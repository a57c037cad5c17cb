from __future__ import annotations

import ast
from types import SimpleNamespace

from torchreview.catalog import Rule
from torchreview.engine.context import position
from torchreview.findings import Severity

# Below this many lines of code a single script is still read top to bottom in
# one sitting (tutorials, minimal reproductions, small experiments): splitting
# it would add files without adding reuse. See "Heuristics" in the docstring.
MIN_CODE_LINES = 100


class MonolithicTrainingScript(Rule):
    """
    ## What it does
    Flags a `.py` file that defines the model class, the data loading
    (a `Dataset` subclass or a `DataLoader`) and the training loop, once the
    file has at least 100 lines of code.

    ## Why is this bad?
    When everything lives in one script, nothing can be reused or tested on
    its own: evaluating the model means importing (and running) the training
    script, a second experiment copies the file, and a data-pipeline change
    is reviewed together with model changes. Separate `model.py`,
    `data.py` and `train.py` keep each part importable.

    ## Example
    ```python
    import argparse
    import os
    import random

    import pandas as pd
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset


    class CsvDataset(Dataset):
        def __init__(self, path):
            frame = pd.read_csv(path)
            self.features = torch.tensor(frame.drop(columns="label").values, dtype=torch.float32)
            self.labels = torch.tensor(frame["label"].values, dtype=torch.long)

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, index):
            return self.features[index], self.labels[index]


    class Classifier(nn.Module):
        def __init__(self, in_features, hidden, classes):
            super().__init__()
            self.body = nn.Sequential(
                nn.Linear(in_features, hidden),
                nn.ReLU(),
                nn.Dropout(0.1),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
            )
            self.head = nn.Linear(hidden, classes)

        def forward(self, x):
            return self.head(self.body(x))


    def evaluate(model, loader, device):
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for features, labels in loader:
                features, labels = features.to(device), labels.to(device)
                predictions = model(features).argmax(dim=1)
                correct += (predictions == labels).sum().item()
                total += labels.numel()
        return correct / max(total, 1)


    def set_seed(seed):
        random.seed(seed)
        torch.manual_seed(seed)


    def save_checkpoint(path, model, optimizer, epoch, best):
        torch.save({
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "best": best,
        }, path)


    def load_checkpoint(path, model, optimizer):
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        return state["epoch"] + 1, state["best"]


    def count_parameters(model):
        total = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        print(f"{total} parameters, {trainable} trainable")
        return trainable


    def train_one_epoch(model, loader, optimizer, criterion, device):
        model.train()
        running = torch.zeros((), device=device)
        for features, labels in loader:
            features, labels = features.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(features), labels)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        return running.item() / max(len(loader), 1)


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--train", default="train.csv")
        parser.add_argument("--valid", default="valid.csv")
        parser.add_argument("--epochs", type=int, default=10)
        parser.add_argument("--lr", type=float, default=1e-3)
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--resume", default="")
        parser.add_argument("--hidden", type=int, default=256)
        args = parser.parse_args()
        set_seed(args.seed)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        train_set, valid_set = CsvDataset(args.train), CsvDataset(args.valid)
        train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=4)
        valid_loader = DataLoader(valid_set, batch_size=args.batch_size, num_workers=4)
        model = Classifier(train_set.features.shape[1], args.hidden, 10).to(device)
        count_parameters(model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        criterion = nn.CrossEntropyLoss()
        start, best = 0, 0.0
        if args.resume and os.path.exists(args.resume):
            start, best = load_checkpoint(args.resume, model, optimizer)
        for epoch in range(start, args.epochs):
            loss = train_one_epoch(model, train_loader, optimizer, criterion, device)
            accuracy = evaluate(model, valid_loader, device)
            print(f"epoch {epoch}: loss {loss:.4f} accuracy {accuracy:.3f}")
            best = max(best, accuracy)
            save_checkpoint("last.pt", model, optimizer, epoch, best)


    if __name__ == "__main__":
        main()
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader

    from data import build_dataset
    from model import Net

    def train():
        loader = DataLoader(build_dataset(), batch_size=8)
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    ## Heuristics
    Threshold: files with fewer than 100 lines of code (non-blank lines that
    are not only a comment) are not reported. Below that size such files are
    nearly always tutorials, minimal reproductions or quick experiments meant
    to be read in one piece (on real code, the 60-100 line band was almost
    only tutorials), and splitting them adds files without adding reuse.
    Notebooks and test files are exempt. The model is an `nn.Module`
    subclass defined in the file; the training loop is a loop with
    `backward()` and an optimizer `step()`. Reported once, at the model class.
    """

    code = "TR302"
    name = "monolithic-training-script"
    severity = Severity.LOW
    severity_reason = (
        "Style and structure: one file with model, data and loop works; it is harder to reuse and "
        "test (catalog: high)."
    )
    summary = "one file holds the model class, the data loading and the training loop"
    min_code_lines = MIN_CODE_LINES

    def check_file(self, ctx) -> None:
        if ctx.source.is_notebook or ctx.is_test_file or not ctx.training_loops:
            return
        m = ctx.model
        models = sorted((m.classes[n] for n in m.module_classes), key=position)
        if not models:
            return
        data = sorted([m.classes[n] for n in m.dataset_classes] +
                      [c for c in m.calls if m.qualname(c.func) == "torch.utils.data.DataLoader"], key=position)
        if not data:
            return
        code_lines = sum(1 for line in ctx.source.lines if line.strip() and not line.strip().startswith("#"))
        if code_lines < self.min_code_lines:
            return
        model = models[0]
        data_what = f"`{data[0].name}`" if isinstance(data[0], ast.ClassDef) else "a `DataLoader`"
        loop = ctx.training_loops[0].node
        line = ctx.source.line_text(model.lineno)
        spot = SimpleNamespace(lineno=model.lineno, col_offset=model.col_offset, end_lineno=model.lineno,
                               end_col_offset=len(line.encode()))
        ctx.report(spot, f"this {code_lines}-line file defines the model `{model.name}`, the data loading "
                         f"({data_what}, {ctx.line_of(data[0])}) and the training loop ({ctx.line_of(loop)}): "
                         "move them to separate modules (e.g. model.py, data.py, train.py) so each can be "
                         "imported, tested and reused")
