from __future__ import annotations

import re

from torchreview.catalog import Rule
from torchreview.findings import Severity

_TEST_NAME = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$|conftest\.py$")
_TEST_DIR = re.compile(r"(^|/)(tests?|testing)/")


def _is_test(path: str) -> bool:
    """As ``FileContext.is_test_file``: a file of a test suite's folder (its fixtures too)."""
    path = path.replace("\\", "/")
    return bool(_TEST_NAME.search(path) or _TEST_DIR.search(path))


class NoRandomSeed(Rule):
    """
    ## What it does
    Project rule. Flags a project that trains a model (a loop with
    `backward()` and `optimizer.step()`) but never seeds torch's random
    generators anywhere: no `torch.manual_seed`, `seed_everything`,
    `set_seed` or other seeding helper. At low severity, it also flags a
    project that seeds torch but draws from NumPy's or Python's global random
    generators (`np.random.rand`, `random.shuffle`, ...) without ever seeding
    them.

    ## Why is this bad?
    Weight initialisation, dropout, data shuffling and augmentation all draw
    random numbers. Without a fixed seed two runs of the same code give
    different results, so a change cannot be told apart from noise, and a
    reported result cannot be reproduced. Seeding only torch leaves the NumPy
    and `random` draws (augmentations, splits, sampling) varying between runs.

    ## Example
    ```python
    import torch

    def fit(model, loader, optimizer):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    import torch

    torch.manual_seed(0)

    def fit(model, loader, optimizer):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    ```

    ## Heuristics
    A call to any function whose name mentions a seed, other than torch's
    own `manual_seed` (`seed_everything`, `set_seed`, `init_seeds`, a helper
    imported from outside the checked tree) is taken to seed every
    generator. NumPy draws through a seeded `default_rng(seed)` /
    `RandomState(seed)` generator are not global draws and are never
    reported. Training loops in test files do not make a training project.
    The finding points at the first training loop (or the first unseeded
    draw) of the project.
    Seed 0: `if args.seed: torch.manual_seed(args.seed)` (or
    `gen.manual_seed(seed) if seed else None`) is reported, in any file,
    when the tested name mentions `seed` and the guarded code passes that
    same expression to a seeding call; a file that declares its seed option
    with `default=0` (0 meaning "do not seed") is left alone, and so is a
    parameter of a notebook helper that every call in the notebook gives a
    non-zero number or `None` (`show_random(data, seed=42)`; all callers are
    in view there, so a seed of 0 never reaches the test). A "seeding call"
    that reaches a function of the same module which seeds nothing itself
    (`if args.seed_path: seeds = load_seeds(args.seed_path)`, a file of
    environment seeds) is not one: the tested value is not a seed.
    """

    code = "TR405"
    name = "no-random-seed"
    severity = Severity.LOW
    kind = "advice"
    severity_reason = (
        "Reproducibility hygiene: unseeded runs work and differ from run to run (catalog: medium)."
    )
    scope = ("project",)
    summary = "Training project with no random seed (or NumPy/`random` left unseeded)"
    root_cause = "training-setup"

    def check_project(self, project) -> None:
        for facts in project.files:
            if _is_test(facts.path):
                continue
            for anchor in facts.seed_truthiness_guards:
                # a command-line seed is the plain bug (`--seed 0` is a seed a user asks for); a
                # seed a caller or config hands in may use 0 for "no seed" on purpose, or be
                # passed on to other seeded work (judged false 3 of 4 times): medium
                project.report(anchor, "the seed is tested for truthiness before seeding: 0 is falsy, so "
                                       "a seed of 0 (`--seed 0`) silently leaves the run unseeded "
                                       "and not reproducible; test `is not None` instead",
                               severity=Severity.MEDIUM, kind="defect",
                               confidence="high" if anchor in facts.seed_truthiness_from_cli else "medium")
        trainers = sorted((f for f in project.files if f.trains and not _is_test(f.path)), key=lambda f: f.path)
        if not trainers:
            return
        seed_helper = any(f.seed_helper for f in project.files)
        if not any(f.seeds_torch for f in project.files) and not seed_helper:
            others = [n for seeded, n in ((any(f.seeds_numpy for f in project.files), "NumPy"),
                                          (any(f.seeds_python for f in project.files), "`random`")) if seeded]
            also = f" (only {' and '.join(others)} {'is' if len(others) == 1 else 'are'} seeded)" if others else ""
            project.report(trainers[0].training_loop,
                           f"this project trains a model but never seeds torch{also}: initialisation, "
                           f"dropout and shuffling differ on every run; call `torch.manual_seed(seed)` (and "
                           f"seed NumPy/`random` if used) once at start-up")
            return
        if seed_helper:
            return
        for draw, seeded, what, fix in (
                (lambda f: f.numpy_random, lambda f: f.seeds_numpy, "NumPy's global generator", "np.random.seed(seed)"),
                (lambda f: f.python_random, lambda f: f.seeds_python, "Python's `random` module", "random.seed(seed)")):
            users = sorted((f for f in project.files if draw(f) is not None), key=lambda f: f.path)
            if users and not any(seeded(f) for f in project.files):
                project.report(draw(users[0]),
                               f"torch is seeded but {what} is used here and never seeded: these draws still "
                               f"differ between runs; add `{fix}` next to `torch.manual_seed`",
                               severity=Severity.LOW)
