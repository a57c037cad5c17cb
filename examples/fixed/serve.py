"""A tiny inference service that returns predictions, never internals."""

import json
import os

import torch
from fastapi import FastAPI

from model import Classifier

app = FastAPI()
API_KEY = os.environ.get("SERVICE_API_KEY", "")
with open("label_map.json", encoding="utf-8") as handle:
    labels = json.load(handle)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Classifier(30000, 128, len(labels))
model.load_state_dict(torch.load("model.pt", map_location=device, weights_only=True))
model = torch.compile(model.to(device).eval())


@app.post("/classify")
def classify(tokens: list[int]):
    batch = torch.tensor([tokens], device=device)
    with torch.inference_mode():
        logits = model(batch)
    index = int(logits.argmax(dim=-1))
    return {"label": labels[index], "score": float(logits.softmax(dim=-1)[0, index])}
