import torch.nn as nn


class TinyGPT(nn.Module):
    def __init__(self, vocab=32, width=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.block = nn.TransformerEncoderLayer(width, 2, 32, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        return self.head(self.block(self.tok(idx)))
