import torch
import torchvision


class BoxScoreTarget:
    def __init__(self, labels, boxes, iou_threshold=0.5):
        self.labels, self.boxes, self.iou_threshold = labels, boxes, iou_threshold

    def __call__(self, outputs):
        score = torch.Tensor([0])
        if torch.cuda.is_available():
            score = score.cuda()
        if len(outputs["boxes"]) == 0:
            return score
        for box, label in zip(self.boxes, self.labels):
            ref = torch.Tensor(box[None, :])
            if torch.cuda.is_available():
                ref = ref.cuda()
            ious = torchvision.ops.box_iou(ref, outputs["boxes"])
            best = ious.argmax()
            if ious[0, best] > self.iou_threshold and outputs["labels"][best] == label:
                score = score + ious[0, best] + outputs["scores"][best]
        return score
