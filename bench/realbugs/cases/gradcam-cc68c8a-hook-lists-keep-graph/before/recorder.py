import torch


class LayerRecorder:
    def __init__(self, model, layers):
        self.model = model
        self.acts, self.grads, self.handles = [], [], []
        for layer in layers:
            self.handles.append(layer.register_forward_hook(self._keep))

    def _keep(self, module, inputs, output):
        self.acts.append(output)
        if output.requires_grad:
            output.register_hook(lambda g: self.grads.insert(0, g))

    def __call__(self, x):
        self.acts, self.grads = [], []
        return self.model(x)

    def release(self):
        for h in self.handles:
            h.remove()


def saliency(model, layer, image, cls):
    rec = LayerRecorder(model, [layer])
    score = rec(image)[:, cls].sum()
    score.backward()
    weights = rec.grads[0].mean((2, 3), keepdim=True)
    cam = torch.relu((weights * rec.acts[0]).sum(1)).detach()
    rec.release()
    return cam
