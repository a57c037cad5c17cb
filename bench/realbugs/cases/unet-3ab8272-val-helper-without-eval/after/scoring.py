import torch


def dice_score(net, samples, device):
    net.eval()
    total = 0.0
    for image, mask in samples:
        image = image.unsqueeze(0).to(device)
        mask = mask.to(device)
        with torch.no_grad():
            pred = (torch.sigmoid(net(image))[0] > 0.5).float()
        inter = (pred * mask).sum()
        total += (2 * inter / (pred.sum() + mask.sum() + 1e-6)).item()
    return total / max(len(samples), 1)
