import torch

from lm import WordLM

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

with open("lm.pt", "rb") as fh:
    allowed = [WordLM, torch.nn.Embedding, torch.nn.GRU, torch.nn.Linear]
    with torch.serialization.safe_globals(allowed):
        net = torch.load(fh, map_location=device)
net.eval()

word = torch.randint(0, 50, (1, 1), device=device)
state = None
with torch.no_grad():
    for _ in range(5):
        logits, state = net(word, state)
        word = torch.multinomial(logits[-1].softmax(-1), 1)
        print(word.item())
