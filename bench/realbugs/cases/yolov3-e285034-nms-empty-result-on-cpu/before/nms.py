import torch
import torchvision


def suppress(prediction, conf_thres=0.25, iou_thres=0.45):
    results = [torch.zeros(0, 6)] * prediction.shape[0]
    for i, x in enumerate(prediction):
        x = x[x[:, 4] > conf_thres]
        if not x.shape[0]:
            continue
        boxes = torch.cat((x[:, :2] - x[:, 2:4] / 2, x[:, :2] + x[:, 2:4] / 2), 1)
        conf, cls = x[:, 5:].max(1, keepdim=True)
        keep = torchvision.ops.nms(boxes, conf.view(-1), iou_thres)
        results[i] = torch.cat((boxes, conf, cls.float()), 1)[keep]
    return results


def detect(model, images, device):
    model.to(device).eval()
    with torch.no_grad():
        pred = model(images.to(device))
    return torch.cat(suppress(pred))
