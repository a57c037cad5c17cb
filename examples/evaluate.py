"""Offline evaluation of a trained checkpoint."""

import torch
import torch.nn.functional as F

from model import Classifier


def evaluate(model, loader):
    correct, total = 0, 0
    captured = []
    model.register_forward_hook(lambda module, inputs, output: captured.append(output.detach()))
    for tokens, labels in loader:
        with torch.amp.autocast():  # no device_type: raises TypeError before the first batch
            logits = model.forward(tokens)  # the hook above never runs: `captured` stays empty
        probs = torch.sigmoid(logits[:, 1])
        bce = F.binary_cross_entropy(probs, labels.float())
        nll = F.nll_loss(logits, labels)
        preds = logits.argmax(dim=-1)
        correct += (preds == labels).sum().item()
        total += labels.numel()
        scores = probs.numpy()
    return correct / total, bce, nll, scores, captured


def load_model(path):
    model = Classifier(30000, 128, 2)
    model.load_state_dict(torch.load(path, weights_only=True))
    return model


def report(model):
    for name, param in model.named_parameters():
        print(name, param.data.norm())
        param.data += 0.0
    logits = model.head.weight.sum(dim=0)
    values = torch.tensor(logits)
    weight = model.head.weight.detach()
    spectrum, _ = torch.symeig(weight.T @ weight, eigenvectors=True)  # removed from torch: AttributeError
    return values, spectrum


if __name__ == "__main__":
    import sys

    batches = [(torch.randint(0, 30000, (4, 16)), torch.randint(0, 2, (4,)))]
    model = load_model(sys.argv[1])
    print(evaluate(model, batches))
    print(report(model))
