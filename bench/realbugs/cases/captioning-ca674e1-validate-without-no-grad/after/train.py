import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def validate(val_loader, encoder, decoder, criterion):
    decoder.eval()
    if encoder is not None:
        encoder.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for imgs, caps in val_loader:
            imgs, caps = imgs.to(device), caps.to(device)
            if encoder is not None:
                imgs = encoder(imgs)
            scores = decoder(imgs)
            loss = criterion(scores.flatten(0, 1), caps.flatten())
            total += loss.item() * caps.size(0)
            count += caps.size(0)
    return total / max(count, 1)


class Decoder(nn.Module):
    def __init__(self, width=12, vocab=20, steps=4):
        super().__init__()
        self.steps = steps
        self.proj = nn.Linear(width, vocab)

    def forward(self, feats):
        return self.proj(feats).unsqueeze(1).expand(-1, self.steps, -1)


if __name__ == "__main__":
    enc = nn.Sequential(nn.Flatten(), nn.Linear(48, 12)).to(device)
    dec = Decoder().to(device)
    data = torch.utils.data.TensorDataset(torch.rand(8, 3, 4, 4), torch.randint(0, 20, (8, 4)))
    print(validate(torch.utils.data.DataLoader(data, batch_size=4), enc, dec, nn.CrossEntropyLoss()))
