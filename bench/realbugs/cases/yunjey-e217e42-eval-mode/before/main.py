import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.rnn = nn.LSTM(n_in, n_hidden, num_layers=2, batch_first=True, dropout=0.3)
        self.out = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(y[:, -1, :])


net = Tagger(28, 64, 10)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 28, 28), torch.randint(0, 10, (64,))), batch_size=8)
test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(32, 28, 28), torch.randint(0, 10, (32,))), batch_size=8)

for epoch in range(2):
    for seqs, labels in train_loader:
        loss = criterion(net(seqs), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

with torch.no_grad():
    hits = 0
    for seqs, labels in test_loader:
        hits += (net(seqs).argmax(1) == labels).sum().item()
    print(hits / 32)
