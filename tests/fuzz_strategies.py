"""Hypothesis strategies shared by the CI fuzz test and bench/fuzz_campaign.py.

Programs: PyTorch-flavoured code built from fragments (so the rules have
something to look at), grammar-generated Python from hypothesmith when it is
installed, and byte-level mutations of real example files. Artifacts: raw
bytes, mutated crafted pickles/archives, and random opcode sequences. Nothing
generated here is ever executed or unpickled.
"""

from __future__ import annotations

import glob
import os
import pickletools
import zipfile

from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

NAMES = ["model", "net", "opt", "optimizer", "loss", "x", "y", "batch", "loader", "state", "scaler", "self.model",
         "out", "m", "data", "f"]
EXPRS = [
    "torch.load({s})", "torch.load({s}, weights_only=True)", "torch.load({s}, map_location='cpu')",
    "nn.Linear(4, 2)", "nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))", "torch.randn(8, 4)",
    "torch.optim.SGD({n}.parameters(), lr=0.1)", "torch.optim.Adam(params)", "{n}({n})", "{n}.cuda()",
    "{n}.to('cuda')", "{n}.detach().cpu().numpy()", "{n}.item()", "{n}.data", "torch.tensor({n})",
    "DataLoader(ds, batch_size=1)", "DataLoader(ds, batch_size=64, num_workers=4)", "pickle.load({n})",
    "F.softmax({n}, dim=-1)", "F.cross_entropy({n}, {n})", "{n}.squeeze()", "torch.cuda.amp.GradScaler()",
    "torch.compile({n})", "nn.DataParallel({n})", "lambda: {n}", "[{n} for {n} in {n}]", "{n} + {n}",
    "torch.hub.load('a/b', 'm', trust_repo=True)", "np.load({s}, allow_pickle=True)", "{s}", "1", "None",
    "{n}[0]", "{n}.sum()", "os.environ['TOKEN']", "requests.get({s})", "{n}.state_dict()",
]
STATEMENTS = [
    "{n} = {e}", "{n} += {e}", "{e}", "{n}.backward()", "{n}.step()", "{n}.zero_grad()", "{n}.train()",
    "{n}.eval()", "torch.save({n}, {s})", "torch.manual_seed(0)", "torch.autograd.set_detect_anomaly(True)",
    "torch.nn.utils.clip_grad_norm_({n}.parameters(), 1.0)", "return {e}", "pass", "del {n}",
    "{n}.append({e})", "assert {n}", "print({e})", "torch.cuda.empty_cache()", "break", "continue",
    "raise ValueError({s})", "global {v}", "yield {e}", "{n}: int = {e}", "import {mod}",
    "from {mod} import {v}", "{n}.weight.data.fill_(0)", "{n}.requires_grad_(False)",
]
BLOCKS = [
    "for {v} in {e}:", "while {e}:", "if {e}:", "else:", "with torch.no_grad():", "with {e} as {v}:",
    "def {v}(self, {v}):", "def {v}({v}, *args, **kwargs):", "async def {v}():", "class {V}(nn.Module):",
    "class {V}:", "try:", "except RuntimeError as e:", "finally:", "if __name__ == '__main__':",
    "with torch.autocast('cuda'):", "@torch.no_grad()\ndef {v}():"
]
STRINGS = ["'model.pt'", "args.ckpt", "url", "'/tmp/x.pkl'", "f'{{path}}'", "path", "'cuda'", "'secret123'"]
MODULES = ["torch", "torch.nn as nn", "pickle", "numpy as np", "os", "requests", "torch.nn.functional as F"]
PRELUDE = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport pickle\n"
           "import numpy as np\nfrom torch.utils.data import DataLoader\n")


@st.composite
def torch_programs(draw, max_statements: int = 40) -> str:
    """A syntactically plausible PyTorch program (sometimes not valid: a stray
    ``return``, ``break`` or ``else`` is fine, the reviewer must cope)."""
    lines: list[str] = []
    depth = 0
    n = draw(st.integers(1, max_statements))
    for _ in range(n):
        indent = "    " * depth

        def fill(template: str) -> str:
            return template.format(
                n=draw(st.sampled_from(NAMES)), v=draw(st.sampled_from([x for x in NAMES if "." not in x])),
                V=draw(st.sampled_from(["Net", "Model", "Block"])), s=draw(st.sampled_from(STRINGS)),
                e=draw(st.sampled_from(EXPRS)).format(n=draw(st.sampled_from(NAMES)),
                                                       s=draw(st.sampled_from(STRINGS))),
                mod=draw(st.sampled_from(MODULES)).split(" as ")[0], )

        kind = draw(st.integers(0, 9))
        if kind < 3 and depth < 6:
            header = fill(draw(st.sampled_from(BLOCKS)))
            lines.append("\n".join(indent + part if k == 0 or not part.startswith(indent) else part
                                   for k, part in enumerate(header.split("\n"))))
            depth += 1
            lines.append("    " * depth + fill(draw(st.sampled_from(STATEMENTS))))
        elif kind == 3 and depth:
            depth = draw(st.integers(0, depth - 1))
        else:
            lines.append(indent + fill(draw(st.sampled_from(STATEMENTS))))
    return PRELUDE + "\n".join(lines) + "\n"


def grammar_programs():
    """hypothesmith's grammar-derived Python (valid syntax), or nothing if it is not installed."""
    try:
        import hypothesmith
    except ImportError:  # pragma: no cover - optional test dependency
        return st.nothing()
    return hypothesmith.from_grammar()


def real_sources() -> list[str]:
    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.py"), recursive=True))
    paths += sorted(glob.glob(os.path.join(HERE, "fixtures", "*", "*.py")))[:60]
    out = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as fh:
            out.append(fh.read())
    return out


@st.composite
def mutated_bytes(draw, seeds: list[bytes], max_edits: int = 6) -> bytes:
    """One of ``seeds`` with a few edits: flips, cuts, inserts, duplicated slices, big numbers."""
    out = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, max_edits))):
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        op = draw(st.integers(0, 5))
        if op == 0:
            out[at] = draw(st.integers(0, 255))
        elif op == 1:
            del out[at:]
        elif op == 2:
            out[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == 3:
            out[at:at] = out[at:at + draw(st.integers(1, 64))]
        elif op == 4:
            out[at:at + 4] = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f", b"\0\0\0\x80"]))
        else:
            del out[at:at + draw(st.integers(1, 32))]
    return bytes(out)


def mutated_sources(seeds: list[str]):
    encoded = [s.encode("utf-8") for s in seeds]
    return mutated_bytes(encoded).map(lambda b: b.decode("utf-8", errors="replace"))


# -- artifacts -------------------------------------------------------------------------------
_OPCODES = [op for op in pickletools.opcodes if op.code not in ("\x80",)]
_ARG_SIZES = {1: 1, 2: 2, 4: 4, 8: 8}


@st.composite
def opcode_streams(draw, max_ops: int = 40) -> bytes:
    """A pickle-looking stream: protocol header, random opcodes with random
    arguments of the right width (strings for the text ones), a STOP."""
    out = bytearray(b"\x80" + bytes([draw(st.integers(0, 5))]))
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(_OPCODES))
        out += op.code.encode("latin-1")
        arg = op.arg
        if arg is None:
            continue
        n = arg.n
        if n in _ARG_SIZES:
            out += draw(st.binary(min_size=n, max_size=n))
        elif n == -1:  # newline-terminated text (GLOBAL, INST, INT, ...)
            out += draw(st.sampled_from([b"os\nsystem\n", b"builtins\neval\n", b"torch._utils\n_rebuild_tensor_v2\n",
                                         b"collections\nOrderedDict\n", b"1\n", b"'a'\n", b"\n"]))
        else:  # length-prefixed
            body = draw(st.binary(max_size=24))
            width = {-2: 1, -3: 4, -4: 4, -5: 8}.get(n, 4)  # pickletools' TAKEN_FROM_ARGUMENT* widths
            out += len(body).to_bytes(width, "little") + body
    out += b"."
    return bytes(out)


def artifact_seeds() -> list[bytes]:
    import artifact_craft as craft

    seeds = [craft.benign_dict_pickle(2), craft.benign_dict_pickle(4), craft.exec_stack_global_memo(),
             craft.custom_class_pickle(), craft.legacy_torch_file(), craft.npy_object(craft.benign_dict_pickle()),
             craft.torch_like_zip(craft.benign_dict_pickle()),
             craft.torch_like_zip(craft.os_system_reduce(), compression=zipfile.ZIP_DEFLATED),
             craft.zip_bytes({"m.pt": craft.torch_like_zip(craft.os_system_reduce())}),
             craft.legacy_tar(craft.benign_dict_pickle())]
    return seeds


def artifact_streams(seeds: list[bytes]):
    import artifact_craft as craft

    return st.one_of(
        st.binary(max_size=512),
        mutated_bytes(seeds),
        opcode_streams(),
        opcode_streams().map(lambda stream: craft.torch_like_zip(stream)),
    )


ARTIFACT_SUFFIXES = [".pkl", ".pt", ".pth", ".bin", ".ckpt", ".npy", ".joblib", ".tar", ".mar", ".zip", ".pkl.gz"]
