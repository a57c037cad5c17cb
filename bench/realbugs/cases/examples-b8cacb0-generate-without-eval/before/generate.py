import argparse

import torch
import torch.nn as nn


class WordRNN(nn.Module):
    def __init__(self, vocab=40, width=16, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.embed = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, width, num_layers=2, dropout=dropout)
        self.out = nn.Linear(width, vocab)

    def forward(self, x, hidden=None):
        y, hidden = self.rnn(self.drop(self.embed(x)), hidden)
        return self.out(self.drop(y)), hidden


parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint", default="lm_weights.pt")
parser.add_argument("--words", type=int, default=5)
args = parser.parse_args()

model = WordRNN()
model.load_state_dict(torch.load(args.checkpoint, map_location="cpu", weights_only=True))

word = torch.randint(0, 40, (1, 1))
hidden = None
with torch.no_grad():
    for _ in range(args.words):
        logits, hidden = model(word, hidden)
        word = torch.multinomial(logits[-1].softmax(-1), 1)
        print(word.item())
