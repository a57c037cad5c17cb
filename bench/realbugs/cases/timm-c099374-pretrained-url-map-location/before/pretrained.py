import torch.nn as nn
from torch.utils import model_zoo


class TinyNet(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8, n_classes)

    def forward(self, x):
        return self.head(self.stem(x).mean((2, 3)))


def with_pretrained(model, url, n_classes):
    weights = model_zoo.load_url(url, progress=False)
    if n_classes != 10:
        del weights["head.weight"], weights["head.bias"]
    model.load_state_dict(weights, strict=n_classes == 10)
    return model


model = with_pretrained(TinyNet(), "https://example.invalid/tinynet.pth", 10)
