import numpy as np
import torch
import torch.nn as nn

net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.PixelShuffle(2))
net.load_state_dict(torch.load("net.pth", map_location="cpu", weights_only=True))
net.eval()

low = torch.rand(1, 1, 8, 8)
out = net(low)
out = out.cpu()
pixels = out[0].numpy()
pixels = (pixels * 255.0).clip(0, 255)
print(np.uint8(pixels[0]).shape)
