import torch
import torch.nn as nn
from torch.nn.utils import clip_grad_norm


class LM(nn.Module):
    def __init__(self, vocab=40, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.out = nn.Linear(width, vocab)

    def forward(self, x, h):
        y, h = self.lstm(self.embed(x), h)
        return self.out(y.reshape(-1, y.size(2))), h


model = LM()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
data = torch.randint(0, 40, (2, 31))
for epoch in range(2):
    states = (torch.zeros(1, 2, 16), torch.zeros(1, 2, 16))
    for i in range(0, 30, 10):
        inputs, targets = data[:, i:i + 10], data[:, i + 1:i + 11]
        states = tuple(s.detach() for s in states)
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.reshape(-1))
        model.zero_grad()
        loss.backward()
        clip_grad_norm(model.parameters(), 0.5)
        optimizer.step()
