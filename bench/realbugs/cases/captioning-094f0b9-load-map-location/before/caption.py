import argparse

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe(encoder, decoder, image, max_len=5):
    with torch.no_grad():
        feats = encoder(image.unsqueeze(0).to(device))
        words = decoder(feats)[:max_len]
    return words.argmax(-1).tolist()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    args = parser.parse_args()

    checkpoint = torch.load(args.model)
    decoder = checkpoint["decoder"].to(device)
    decoder.eval()
    encoder = checkpoint["encoder"].to(device)
    encoder.eval()
    print(describe(encoder, decoder, torch.rand(3, 32, 32)))
