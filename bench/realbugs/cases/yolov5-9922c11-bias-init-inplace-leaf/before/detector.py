import math

import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, n_classes=3, n_anchors=2, strides=(8, 16)):
        super().__init__()
        self.na, self.nc = n_anchors, n_classes
        self.strides = strides
        self.convs = nn.ModuleList(nn.Conv2d(8, n_anchors * (n_classes + 5), 1) for _ in strides)
        self._init_bias()

    def _init_bias(self):
        for conv, s in zip(self.convs, self.strides):
            b = conv.bias.view(self.na, -1)
            b[:, 4] += math.log(8 / (640 / s) ** 2)
            b[:, 5:] += math.log(0.6 / (self.nc - 0.99))
            conv.bias = nn.Parameter(b.view(-1), requires_grad=True)

    def forward(self, feats):
        return [conv(f) for conv, f in zip(self.convs, feats)]


head = Head()
print([o.shape for o in head([torch.randn(1, 8, 4, 4), torch.randn(1, 8, 2, 2)])])
