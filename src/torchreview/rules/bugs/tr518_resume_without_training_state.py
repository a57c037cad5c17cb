from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.engine.context import where
from torchreview.findings import Fix, Severity

_STATES = (
    ("optimizer", "the optimizer state (momentum, Adam moments)", "`optimizer.load_state_dict(ckpt[...])`"),
    ("scheduler", "the LR scheduler (the schedule restarts)", "`scheduler.load_state_dict(ckpt[...])`"),
    ("scaler", "the `GradScaler` (the loss scale restarts)", "`scaler.load_state_dict(ckpt[...])`"),
    ("counter", "the epoch/step counter (training restarts at 0)", "`start_epoch = ckpt[...] + 1`"),
)


class ResumeWithoutTrainingState(Rule):
    """
    ## What it does
    Reports a checkpoint load that resumes training (a `--resume`/`restore`
    path, or a load that reads some training state) but restores only part
    of it: the model weights come back while the optimizer, the learning-rate
    scheduler, the `GradScaler` or the epoch/step counter does not, although
    the checkpoint holds it (or, for the optimizer, scheduler and scaler, the
    training code uses one and no save of that checkpoint is known).

    ## Why is this bad?
    The resumed run is not the interrupted run: Adam's moments and momentum
    restart from zero (a loss spike), the LR schedule starts again from its
    warm-up or first step, the loss scale restarts, and the epoch loop runs
    the full number of epochs again. Results stop being reproducible and the
    total schedule is longer than configured.

    ## Example
    ```python
    import argparse
    import torch
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    if args.resume:
        ckpt = torch.load(args.resume, weights_only=True)
        model.load_state_dict(ckpt["model"])
    for epoch in range(10):
        for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch}, "last.pt")
    ```

    ## Use instead
    ```python
    import argparse
    import torch
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume, weights_only=True)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"] + 1
    for epoch in range(start_epoch, 10):
        for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch}, "last.pt")
    ```

    ## Heuristics
    Reads the project's checkpoint index. A load resumes when its path,
    enclosing `if` tests or function name say `resume`/`restore`/`continue`,
    or when it reads an optimizer/epoch/scheduler/scaler key; a
    `pretrained`/`finetune`/`init`/`backbone`/`transfer` path is fine-tuning
    with a fresh optimizer on purpose and is never reported. The load must put
    weights into a model (`load_state_dict`) in a project that trains, and the
    loaded object must not be handed to a helper (which may restore the rest).
    A state counts as restored when a `load_state_dict` targets an
    optimizer/scheduler/scaler or a key naming it is read. Linked saves (file
    name pattern, path variable, the loading function's saves, keys, else the
    project's model checkpoints, saves through `save_on_master`-style helpers
    included) decide what the checkpoint holds. In a file that trains, the
    optimizer (and a scheduler the loop steps, a `GradScaler` the file builds)
    is expected even when the checkpoint does not hold it (the message then
    says to save it too); an optimizer without state (only plain `SGD`
    without momentum is built in the file) is not. The epoch counter is
    expected only when the checkpoint holds it. A learning rate computed from
    the step or epoch by a function (`adjust_learning_rate(optimizer, step)`
    setting `param_group["lr"]`) is no scheduler: restoring the counter and
    the optimizer resumes it, so a file whose loop steps no scheduler object
    expects none, even when another script's checkpoint holds one. A load is
    linked to the saves that write the same file: when the loading script
    itself writes a file of that path, its own saves are the ones read (the
    same `args.checkpoint_dir / "checkpoint.pth"` in another script with its
    own arguments is another file). A restarted `GradScaler` alone is not
    reported: the loss scale recalibrates within a few steps (each overflow
    halves it and skips one step); it is listed next to other missing state.
    Setting a scheduler's `last_epoch` (YOLO style) counts as restoring its
    position. A scheduler built after `optimizer.load_state_dict` in the
    resuming function, with no scheduler state restored, is reported: it
    takes the restored, already decayed learning rate as its base.
    Skipping: inside an epoch loop, `loader = accelerator.skip_first_batches(loader,
    n)` (or `itertools.islice(loader, n, None)`) under an `if`, rebinding the
    name the inner loop iterates and assigned nowhere else in the epoch loop,
    is reported: the resumed epoch's skip is kept for every later epoch.
    State dicts: a class's `state_dict()` returning a dict literal with an
    optimizer's `state_dict()` but no scaler entry is reported when the class,
    or a step runner it holds in an attribute (`self.inner = AmpRunner(...)`),
    builds a `GradScaler` in this file and no other place of the file calls
    that scaler's `state_dict()`: low advice, hidden by default (the loss
    scale recalibrates after a few skipped steps).
    Update counters: a project class whose `__init__` takes an update counter
    with default 0 (`updates`, `num_updates`, `step`, `global_step` ...),
    stores it on `self` and advances it in another method (an EMA's warm-up
    ramp) is reported where it is constructed without that counter (at most
    two positional arguments, no `**kwargs`) after a counter is read back
    from a checkpoint (`start_epoch = ckpt["epoch"] + 1`) in the same
    function.
    """

    code = "TR518"
    name = "resume-without-training-state"
    severity = Severity.MEDIUM
    scope = ("project",)
    summary = "resume restores the model but not the optimizer, scheduler, scaler or epoch counter"
    severity_reason = "silently wrong training: the resumed run restarts momentum, the schedule or the epochs"

    def check_project(self, project) -> None:
        for facts in project.files:
            for key in sorted(k for k in facts.anchors if k.startswith("resume_skip_kept:")):
                project.report(facts.anchors[key],
                               "the loader is replaced by one that skips the batches already seen, for the "
                               "resumed epoch, but the replacement keeps the loader's name: every later epoch "
                               "iterates it too and silently drops those batches; bind the skipping loader to "
                               "another name (`active = skip_first_batches(loader, n) if resuming else loader`)",
                               kind="defect", confidence="high")
            for key in sorted(k for k in facts.anchors if k.startswith("state_dict_without_scaler:")):
                project.report(facts.anchors[key],
                               "this training state holds the optimizer but not the `GradScaler` of the AMP "
                               "step (built in this file): a resume restores model, optimizer and counter but "
                               "restarts the loss scale from its initial value (it recalibrates, skipping a "
                               "step at each overflow); add the scaler's `state_dict()` here and load it back "
                               "in `load_state_dict`",
                               severity=Severity.LOW, kind="advice")
        counters = {k.split(":", 1)[1] for f in project.files for k in f.anchors if k.startswith("counter_class:")}
        for facts in project.files:
            for key in sorted(k for k in facts.anchors if k.startswith("built_after_resume:")):
                name = key.split(":")[1]
                if name in counters:
                    project.report(facts.anchors[key],
                                   f"`{name}` counts its updates (an `updates=0`-style argument drives its "
                                   f"warm-up), but after the resume above it is rebuilt with the counter at 0: "
                                   f"its ramp starts over and the averaged weights are pulled back towards the "
                                   f"current ones; pass the restored count (e.g. `updates=start_epoch * "
                                   f"steps_per_epoch`) or restore its state", kind="likely-defect")
        if not project.any_flag("trains"):
            return
        for facts, load in project.checkpoint_loads():
            if load.purpose != "resume" or load.escapes or \
                    not any(s.target == "model" for s in load.state_loads):
                continue
            link = project.saves_for(load)
            index = facts.checkpoints
            trains = "trains" in facts.flags  # the loop of this file is the one resumed
            used = {"optimizer": trains, "scheduler": trains and index.steps_scheduler,
                    "scaler": trains and index.uses_scaler, "counter": False}
            missing, unsaved = [], []
            held_at = None
            for state, words, _ in _STATES:
                if load.restores(state) or (state == "optimizer" and index.stateless_optimizer) or \
                        (state == "scheduler" and index.positions_scheduler):
                    continue
                held = link.agree(lambda save, state=state: save.holds(state)) if link is not None else []
                if state == "scheduler" and trains and not index.steps_scheduler and \
                        all(f.path != facts.path for f, _ in held):
                    # the resumed loop steps no scheduler object (an LR computed from the restored
                    # epoch/step by a function resumes with them); another script's scheduler is not it
                    held = []
                if held:
                    missing.append((state, words))
                    held_at = held_at or held[0]
                elif used[state]:
                    missing.append((state, words))
                    if link is not None:
                        unsaved.append(state)
            late = load.scheduler_built_after
            late_text = (f"the LR scheduler built at line {late}, after the optimizer state is restored, takes "
                         "the restored (already decayed) learning rate as its base and applies the schedule "
                         "again: build it before loading the optimizer state, or restore its `state_dict()`")
            if late:  # the scheduler problem is the late construction, said once
                missing = [m for m in missing if m[0] != "scheduler"]
                unsaved = [u for u in unsaved if u != "scheduler"]
            if [m[0] for m in missing] == ["scaler"]:
                # a restarted loss scale alone recalibrates within a few steps (skipped
                # overflow steps halve it): mentioned only next to state that matters
                missing, unsaved = [], []
            if not missing:
                if late:
                    project.report(load.anchor, f"resume: {late_text}",
                                   fix=Fix("display", (), "build the scheduler before `optimizer.load_state_dict`"))
                continue
            what = ", ".join(words for _, words in missing)
            hows = "; ".join(how for state, _, how in _STATES if state in {m[0] for m in missing})
            source = f" (the checkpoint saved at {where(*held_at)} holds them)" if held_at else ""
            extra = f"; the checkpoint does not hold the {' or '.join(unsaved)} state yet: save it too" \
                if unsaved else ""
            if late:
                extra += f"; also, {late_text}"
            project.report(load.anchor,
                           f"this resume restores the model weights but not {what}{source}: the resumed run "
                           f"does not continue the interrupted one; restore them ({hows}){extra}",
                           fix=Fix("display", (), f"restore the training state: {hows}"))
