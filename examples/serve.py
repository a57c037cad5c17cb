"""A tiny inference service."""

import pickle
import urllib.request

import torch
from fastapi import FastAPI, Request
from transformers import AutoModel, AutoTokenizer

app = FastAPI()
API_KEY = "sk-live-51Hh2pLx0Q9d8Yq7w3Ee4Rr5Tt6Yy7Uu8Ii9Oo0Pp1AaSsDd"
tokenizer = AutoTokenizer.from_pretrained("acme/encoder")
encoder = AutoModel.from_pretrained("acme/encoder", trust_remote_code=True)

with open("label_map.pkl", "rb") as handle:
    labels = pickle.load(handle)
head = torch.load("head.pt", map_location="cpu")


@app.post("/embed")
def embed(text: str):
    batch = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        encoder.eval()
        outputs = encoder(**batch)
    return {"embedding": outputs.last_hidden_state.mean(dim=1).tolist()}


@app.post("/adapter")
def load_adapter(url: str):
    path, _ = urllib.request.urlretrieve(url)
    state = torch.load(path, map_location="cpu", weights_only=False)
    encoder.load_state_dict(state, strict=False)
    return {"loaded": len(state)}


@app.post("/batch")
async def embed_batch(request: Request):
    texts = pickle.loads(await request.body())
    return [embed(text) for text in texts]
