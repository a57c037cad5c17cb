import torch
import torch.nn as nn
import torch.nn.functional as F


def train_model(model, loader, device, epochs=2, lr=1e-4, amp=True, max_norm=1.0):
    optimizer = torch.optim.RMSprop(model.parameters(), lr=lr, momentum=0.9)
    grad_scaler = torch.amp.GradScaler("cuda", enabled=amp)
    model.train()
    for epoch in range(epochs):
        for images, masks in loader:
            images = images.to(device, dtype=torch.float32)
            masks = masks.to(device, dtype=torch.float32)
            with torch.autocast(device.type, enabled=amp):
                logits = model(images)
                loss = F.binary_cross_entropy_with_logits(logits, masks)
            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            grad_scaler.step(optimizer)
            grad_scaler.update()


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1)).to(dev)
    data = torch.utils.data.TensorDataset(torch.rand(8, 3, 16, 16), (torch.rand(8, 1, 16, 16) > 0.5).float())
    train_model(net, torch.utils.data.DataLoader(data, batch_size=4), dev)
