import torch
import torchvision


class BoxScoreTarget:
    def __init__(self, labels, boxes, iou_threshold=0.5):
        self.labels, self.boxes, self.iou_threshold = labels, boxes, iou_threshold

    def __call__(self, outputs):
        device, dtype = outputs["boxes"].device, outputs["boxes"].dtype
        score = torch.tensor([0.0], device=device, dtype=dtype)
        if len(outputs["boxes"]) == 0:
            return score
        for box, label in zip(self.boxes, self.labels):
            ref = torch.as_tensor(box[None, :], device=device, dtype=dtype)
            ious = torchvision.ops.box_iou(ref, outputs["boxes"])
            best = ious.argmax()
            if ious[0, best] > self.iou_threshold and outputs["labels"][best] == label:
                score = score + ious[0, best] + outputs["scores"][best]
        return score
