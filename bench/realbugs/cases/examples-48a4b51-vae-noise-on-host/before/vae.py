import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(16, 8)
        self.mu = nn.Linear(8, 2)
        self.logvar = nn.Linear(8, 2)
        self.dec = nn.Linear(2, 16)

    def sample(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn(std.size())
        return mu + eps * std

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        return torch.sigmoid(self.dec(self.sample(mu, logvar))), mu, logvar


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyVAE().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.rand(32, 16), batch_size=8)
for batch in loader:
    batch = batch.to(device)
    recon, mu, logvar = model(batch)
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = F.binary_cross_entropy(recon, batch, reduction="sum") + kld
    opt.zero_grad()
    loss.backward()
    opt.step()
