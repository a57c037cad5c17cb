"""Offline evaluation of a trained checkpoint."""

import torch
import torch.nn.functional as F

from model import Classifier


@torch.inference_mode()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    total = 0
    losses = []
    scores = []
    captured = []
    handle = model.register_forward_hook(lambda module, inputs, output: captured.append(output.detach()))
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        with torch.amp.autocast(device_type=torch.device(device).type):
            logits = model(tokens)  # runs the hook
        losses.append(F.binary_cross_entropy_with_logits(logits[:, 1], labels.float()))
        losses.append(F.cross_entropy(logits, labels))
        correct += (logits.argmax(dim=-1) == labels).sum()
        total += labels.numel()
        scores.append(torch.sigmoid(logits[:, 1]).cpu().numpy())
    handle.remove()
    return correct.item() / max(1, total), torch.stack(losses).mean().item(), scores, captured


def load_model(path, device):
    model = Classifier(30000, 128, 2)
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    return model.to(device)


@torch.no_grad()
def report(model):
    norms = {name: param.norm().item() for name, param in model.named_parameters()}
    values = model.head.weight.sum(dim=0).clone()
    weight = model.head.weight.detach()
    spectrum = torch.linalg.eigvalsh(weight.T @ weight)
    return norms, values, spectrum


if __name__ == "__main__":
    import sys

    batches = [(torch.randint(0, 30000, (4, 16)), torch.randint(0, 2, (4,)))]
    model = load_model(sys.argv[1], "cpu")
    print(evaluate(model, batches, "cpu"))
    print(report(model))
