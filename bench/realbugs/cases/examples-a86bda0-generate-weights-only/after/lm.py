import torch.nn as nn


class WordLM(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.cell = nn.GRU(width, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens, state=None):
        hidden, state = self.cell(self.embed(tokens), state)
        return self.head(hidden), state
