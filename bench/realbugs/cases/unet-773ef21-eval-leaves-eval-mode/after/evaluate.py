import torch


def dice(pred, target, eps=1e-6):
    inter = (pred * target).sum()
    return (2 * inter + eps) / (pred.sum() + target.sum() + eps)


def evaluate(net, loader, device):
    net.eval()
    score = 0.0
    with torch.no_grad():
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            pred = (torch.sigmoid(net(images)) > 0.5).float()
            score += dice(pred, masks).item()
    net.train()
    return score / max(len(loader), 1)
