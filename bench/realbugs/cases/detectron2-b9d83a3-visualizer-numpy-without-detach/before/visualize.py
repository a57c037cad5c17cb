import numpy as np
import torch


def boxes_as_array(boxes):
    if isinstance(boxes, torch.Tensor):
        return boxes.numpy()
    return np.asarray(boxes)


def draw_predictions(model, image):
    outputs = model(image)
    boxes = boxes_as_array(outputs["boxes"])
    canvas = np.zeros(image.shape[-2:], dtype=np.uint8)
    for x0, y0, x1, y1 in boxes.astype(int):
        canvas[y0:y1, x0:x1] = 255
    return canvas
