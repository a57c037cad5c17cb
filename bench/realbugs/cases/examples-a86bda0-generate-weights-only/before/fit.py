import torch
import torch.nn.functional as F

from lm import WordLM

net = WordLM(50, 16)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    seq = torch.randint(0, 50, (6, 2))
    logits, _ = net(seq[:-1])
    loss = F.cross_entropy(logits.flatten(0, 1), seq[1:].flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()

with open("lm.pt", "wb") as fh:
    torch.save(net, fh)
