import torch.nn as nn


class Upscaler(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.conv = nn.Conv2d(1, factor ** 2, 3, padding=1)
        self.shuffle = nn.PixelShuffle(factor)

    def forward(self, x):
        return self.shuffle(self.conv(x))
