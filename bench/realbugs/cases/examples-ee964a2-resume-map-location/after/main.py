import argparse
import os

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
parser.add_argument("--resume", default="")
args = parser.parse_args()


def main_worker(args):
    model = nn.Linear(8, 2)
    if args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start_epoch = 0
    if args.resume and os.path.isfile(args.resume):
        if args.gpu is None:
            checkpoint = torch.load(args.resume, map_location="cpu")
        else:
            checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
        start_epoch = checkpoint["epoch"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    return model, optimizer, start_epoch


if __name__ == "__main__":
    main_worker(args)
