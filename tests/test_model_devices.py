"""Model concept: devices (what a device argument names, where a module runs)."""

from __future__ import annotations

import ast

from model_snippets import ctx_of, node


def test_device_kind_of_device_arguments():
    ctx = ctx_of("""
        import torch
        def run(device, y):
            x = torch.zeros(2)
            x.to("cuda")
            x.to("cpu")
            x.to(torch.device("cuda:1"))
            x.to(device)
            x.to(y.device)
            x.to(0)
    """)
    assert ctx.model.device_kind(node(ctx, '"cuda"', ast.Constant)) == "accelerator"
    assert ctx.model.device_kind(node(ctx, '"cpu"', ast.Constant)) == "cpu"
    assert ctx.model.device_kind(node(ctx, 'torch.device("cuda:1")')) == "accelerator"
    assert ctx.model.device_kind(node(ctx, "0", ast.Constant)) == "accelerator"  # an ordinal
    # near-misses: a configured device and another tensor's placement are not literals
    assert ctx.model.device_kind(node(ctx, "device", ast.Name)) == "variable"
    assert ctx.model.device_kind(node(ctx, "y.device", ast.Attribute)) == "follows"


def test_to_call_device_skips_a_dtype():
    ctx = ctx_of("""
        import torch
        x = torch.zeros(2)
        x.to(torch.float16)
        x.to("cuda", non_blocking=True)
        x.to(device="mps")
    """)
    assert ctx.model.to_call_device(node(ctx, "x.to(torch.float16)")) is None
    assert ctx.text(ctx.model.to_call_device(node(ctx, 'x.to("cuda", non_blocking=True)'))) == '"cuda"'
    assert ctx.text(ctx.model.to_call_device(node(ctx, 'x.to(device="mps")'))) == '"mps"'


def test_cuda_evidence_and_its_near_miss():
    on_gpu = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2).cuda()
    """)
    assert on_gpu.text(on_gpu.model.cuda_evidence).endswith(".cuda()")
    on_cpu = ctx_of("""
        import torch
        model = torch.nn.Linear(2, 2).to("cpu")
    """)
    assert on_cpu.model.cuda_evidence is None


def test_moved_to_device_and_may_be_on_accelerator():
    ctx = ctx_of("""
        import torch
        def run(device):
            model = torch.nn.Linear(2, 2)
            model.to(device)
            host = torch.zeros(2)
            model, host
    """)
    model, host = node(ctx, "model, host", ast.Tuple).elts
    assert ctx.flow.moved_to_device(model)
    assert not ctx.flow.moved_to_device(host)
    assert not ctx.autograd.may_be_on_accelerator(host)
