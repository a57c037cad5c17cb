"""Multi-label tagging of audio clips: the loss squashes what is already squashed."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ClipTagger(nn.Module):
    def __init__(self, features, tags):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 128), nn.ReLU(), nn.Linear(128, tags))

    def forward(self, x):
        return self.body(x)


def train(model, loader, optimizer, epochs):
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        for clips, labels in loader:
            optimizer.zero_grad()
            probs = torch.sigmoid(model(clips))
            loss = criterion(probs, labels)  # the loss applies the sigmoid again
            loss.backward()
            optimizer.step()
        torch.save(model.state_dict(), "clip_tagger.pt")
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    clips = torch.from_numpy(np.load("clip_features.npy"))  # (clips, 40) audio features
    tags = torch.from_numpy(np.load("clip_tags.npy")).float()  # (clips, 8) 0/1 tags
    data = TensorDataset(clips, tags)
    model = ClipTagger(40, 8)
    train(model, DataLoader(data, batch_size=32, shuffle=True), torch.optim.Adam(model.parameters()), 5)
