import torch
import torch.nn as nn


def pad_key_mask(mask, src_len):
    if mask.size(1) >= src_len:
        return mask
    filler = torch.zeros(mask.size(0), src_len - mask.size(1))
    if mask.is_cuda:
        filler = filler.cuda()
    return torch.cat([mask.float(), filler], dim=1)


class StepAttention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, query, keys, key_mask):
        key_mask = pad_key_mask(key_mask, keys.size(1)).bool()
        out, _ = self.attn(query, keys, keys, key_padding_mask=key_mask)
        return out
