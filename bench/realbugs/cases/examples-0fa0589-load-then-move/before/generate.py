import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint", default="model.pt")
parser.add_argument("--cuda", action="store_true")
args = parser.parse_args()

device = torch.device("cuda" if args.cuda else "cpu")

with open(args.checkpoint, "rb") as f:
    model = torch.load(f).to(device)
model.eval()

tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
with torch.no_grad():
    for _ in range(4):
        out = model(tokens)
        tokens = out[-1:].argmax(-1)
        print(tokens.item())
