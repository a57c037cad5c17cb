import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

with open("lm.pt", "rb") as fh:
    net = torch.load(fh, map_location=device)
net.eval()

word = torch.randint(0, 50, (1, 1), device=device)
state = None
with torch.no_grad():
    for _ in range(5):
        logits, state = net(word, state)
        word = torch.multinomial(logits[-1].softmax(-1), 1)
        print(word.item())
