import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
opt = parser.parse_args()

model = torch.load(opt.model)
model.eval()
with torch.no_grad():
    print(model(torch.randn(1, 1, 8, 8)).shape)
