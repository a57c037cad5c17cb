"""Classes judged noise or false in the third development sweep (issue 11) for
TR509, TR516, TR508 and TR430: what each reports at default settings (advice
hidden) and what it keeps as hidden advice or drops; and the fix TR511 names for
a plain tensor (a weight: `nn.Parameter`; a constant: a buffer), from the
session-3 dev sweep."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _found(path, code, *, default=True):
    settings = Settings(rule_codes=(code,), jobs=1, advice_codes=() if default else None)
    return {(Path(p.path).name, p.line, p.kind) for f in run_review([str(path)], settings).findings
            for p in (f.parts or (f,))}  # every place of a merged finding


def test_direct_forward_is_a_defect_only_where_hooks_run():
    folder = FIXTURES / "bugs" / "TR509_hook_context"
    everything = _found(folder, "TR509", default=False)
    defects = {(name, line) for name, line, kind in everything if kind != "advice"}
    assert defects == {
        ("fwd_ddp_inner.py", 9),  # ddp.module.forward skips DDP
        ("fwd_ddp_inner.py", 21),  # compiled in place
        ("fwd_local_hooks.py", 8), ("fwd_local_hooks.py", 18),  # register_forward(_pre)_hook here
        ("fwd_pruned_weightnorm.py", 10), ("fwd_pruned_weightnorm.py", 14), ("fwd_pruned_weightnorm.py", 24),
        ("fwd_extract.py", 10),  # hooks registered by an imported project module
    }
    advice = {(name, line) for name, line, kind in everything if kind == "advice"}
    assert advice == {("fwd_ddp_inner.py", 10), ("fwd_local_hooks.py", 21), ("fwd_no_hooks.py", 14),
                      ("fwd_no_hooks.py", 20), ("fwd_no_hooks.py", 23)}
    assert {(name, line) for name, line, _ in _found(folder, "TR509")} == defects


def test_unused_submodule_read_through_its_owner_or_kept_for_a_strict_pretrained_load():
    folder = FIXTURES / "bugs" / "TR516_owner_reads_and_pretrained"
    assert _found(folder, "TR516", default=False) == {
        # no DistributedDataParallel nearby: dead weights are advice (holdout sweep 2)
        ("xmatch_model.py", 12, "advice"),  # fine_matcher (line 11) is read as self.net.fine_matcher
        ("xrefine_parts.py", 9, "advice"),  # refine_head is read as refiner.refine_head elsewhere
        ("xedge_detector.py", 13, "advice"),  # strict load of downloaded weights in the class (DDP or not)
        ("xedge_detector.py", 29, "likely-defect"),  # strict=False, and the file wraps models in DDP
        ("xdet_head.py", 8, "advice"),  # the builder in xdet_model.py downloads and loads strictly
        ("xresume_train.py", 11, "advice"),  # resumed from its own checkpoint: no pretrained, no DDP
    }
    assert ("xdet_head.py", 8, "advice") not in _found(folder, "TR516")


def test_numpy_in_the_forward_of_a_data_transform_is_silent():
    folder = FIXTURES / "quality" / "TR430_data_transforms"
    # transform=, target_transform=, Compose([...]) and Dataset.__getitem__ uses are
    # transforms (silent); a model component and a module called on a tensor are not
    assert _found(folder, "TR430", default=False) == {
        ("xaug_pipeline.py", 50, "likely-defect"), ("xpatch_ops.py", 12, "likely-defect")}


def test_plain_weights_are_told_to_become_parameters_and_constants_buffers():
    path = FIXTURES / "bugs" / "TR511_constants_and_weights.py"
    settings = Settings(rule_codes=("TR511",), jobs=1)
    # weight and bias of one layer are one finding (the bias a related location with its own message)
    fixes = {r.line: ("nn.Parameter" if "nn.Parameter(" in r.message else
                      "register_buffer" if "register_buffer(" in r.message else "?")
             for f in run_review([str(path)], settings).findings for r in (f, *f.related)}
    assert fixes == {18: "register_buffer", 41: "register_buffer",  # constants
                     53: "nn.Parameter", 54: "nn.Parameter",  # a hand-written layer's weight and bias (`b`)
                     64: "nn.Parameter",  # handed to an optimizer
                     65: "register_buffer",  # class weights of a loss, next to real layers
                     74: "register_buffer",  # written-out colour weights of a layer with no other state
                     113: "register_buffer"}  # a table made from an argument that is no number
