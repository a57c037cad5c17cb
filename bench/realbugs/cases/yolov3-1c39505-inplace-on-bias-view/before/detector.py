import math

import torch.nn as nn


class DetectHead(nn.Module):
    def __init__(self, n_classes, n_anchors=3, channels=(64, 128)):
        super().__init__()
        self.n_out = n_classes + 5
        self.n_anchors = n_anchors
        self.convs = nn.ModuleList(nn.Conv2d(c, self.n_out * n_anchors, 1) for c in channels)

    def forward(self, feats):
        return [conv(f) for conv, f in zip(self.convs, feats)]


class Detector(nn.Module):
    def __init__(self, n_classes=80, strides=(8, 16)):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, stride=8, padding=1)
        self.down = nn.Conv2d(64, 128, 3, stride=2, padding=1)
        self.head = DetectHead(n_classes)
        self._prior_biases(strides)

    def _prior_biases(self, strides):
        for conv, s in zip(self.head.convs, strides):
            b = conv.bias.view(self.head.n_anchors, -1)
            b[:, 4] += math.log(8 / (640 / s) ** 2)
            b[:, 5:] += math.log(0.6 / (self.head.n_out - 5 - 0.99))
            conv.bias = nn.Parameter(b.view(-1), requires_grad=True)

    def forward(self, x):
        p3 = self.stem(x)
        return self.head([p3, self.down(p3)])


model = Detector()
