import argparse

import numpy as np
import torch
import torch.nn as nn


def build_net():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 1, 1))


def predict_img(net, image, device, threshold=0.5):
    x = torch.from_numpy(image).permute(2, 0, 1).unsqueeze(0).float().to(device)
    with torch.no_grad():
        prob = torch.sigmoid(net(x))[0, 0]
    return (prob > threshold).cpu().numpy()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="unet.pth")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = build_net().to(device)
    net.load_state_dict(torch.load(args.model, map_location=device, weights_only=True))
    mask = predict_img(net, np.random.rand(16, 16, 3).astype(np.float32), device)
    print(mask.mean())
