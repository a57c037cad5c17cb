import torch
import torch.nn.functional as F


def eval_net(net, loader, device):
    net.eval()
    total = 0.0
    for batch in loader:
        imgs = batch["image"].to(device=device, dtype=torch.float32)
        masks = batch["mask"].to(device=device, dtype=torch.long)
        with torch.no_grad():
            mask_pred = net(imgs)
        total += F.cross_entropy(mask_pred, masks).item()
    net.train()
    return total / max(len(loader), 1)
