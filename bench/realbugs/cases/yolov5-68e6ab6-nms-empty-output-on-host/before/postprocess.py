import torch
import torchvision


def suppress(pred, conf_thres=0.25, iou_thres=0.45):
    keep_mask = pred[..., 4] > conf_thres
    output = [torch.zeros(0, 6)] * pred.shape[0]
    for i, x in enumerate(pred):
        x = x[keep_mask[i]]
        if not x.shape[0]:
            continue
        conf, cls = x[:, 5:].max(1, keepdim=True)
        det = torch.cat((x[:, :4], conf, cls.float()), 1)
        keep = torchvision.ops.nms(det[:, :4], det[:, 4], iou_thres)
        output[i] = det[keep]
    return output


def count_boxes(model, images, device):
    with torch.no_grad():
        pred = model(images.to(device))
    dets = suppress(pred)
    return torch.cat(dets).shape[0]
