import torch
import torch.nn as nn


def gram(x):
    b, c, h, w = x.shape
    f = x.view(b, c, h * w)
    return f.bmm(f.transpose(1, 2)) / (c * h * w)


def train(epochs):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    stylizer = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), nn.Tanh()).to(device)
    features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()).to(device).eval()
    for p in features.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(stylizer.parameters(), lr=1e-3)
    mse = nn.MSELoss()
    data = torch.utils.data.TensorDataset(torch.rand(8, 3, 16, 16))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    for epoch in range(epochs):
        for (x,) in loader:
            opt.zero_grad()
            y = stylizer(x.to(device))
            content = mse(features(y), features(x))
            style = mse(gram(features(y)), gram(features(x)).detach())
            (content + style).backward()
            opt.step()


if __name__ == "__main__":
    train(2)
