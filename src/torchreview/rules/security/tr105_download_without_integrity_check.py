from __future__ import annotations

from torchreview.catalog import Rule
from torchreview.findings import Severity


class DownloadWithoutIntegrityCheck(Rule):
    """
    ## What it does
    Reports a project that downloads data over the network (`urlretrieve`,
    `urlopen`, streamed `requests.get`, `wget`/`curl` through `subprocess`,
    `torch.hub.download_url_to_file` without `hash_prefix`, torchvision
    `download_url` without `md5`, `gdown`) while no file of the project
    checks a hash (`hashlib`, torchvision `check_integrity`/`check_md5`).

    ## Why is this bad?
    Whatever the server returns becomes training data. A compromised mirror,
    a hijacked domain or a man in the middle can swap in poisoned samples or
    a pickle payload, and nothing would notice. Comparing a pinned checksum
    before use turns silent poisoning into a loud failure.

    ## Example
    ```python
    import urllib.request

    urllib.request.urlretrieve("https://example.org/train.csv", "data/train.csv")
    ```

    ## Use instead
    ```python
    import hashlib
    import urllib.request

    EXPECTED = "9f2c0e4d0d6b7e3f1c2a8b5d4e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f"
    urllib.request.urlretrieve("https://example.org/train.csv", "data/train.csv")
    with open("data/train.csv", "rb") as handle:
        if hashlib.sha256(handle.read()).hexdigest() != EXPECTED:
            raise RuntimeError("train.csv does not match its pinned checksum")
    ```

    ## Heuristics
    A project rule: it reads the `downloads_data` and `hash_check` facts of
    every file. Any `hashlib` use anywhere counts as a check (the rule cannot
    prove which file is hashed). `requests.get` counts as a download only when
    streamed or when its `.content`/`.raw`/`iter_content` is read. torchvision
    and Hugging Face dataset classes verify their own checksums and are not
    downloads here. The downloads whose file the same module then unpickles
    (`torch.load` with `weights_only=False`, or without it before torch 2.6;
    `pickle`/`joblib`/`dill` loads, `numpy.load(..., allow_pickle=True)`;
    linked by the destination's
    name or file name) are defects, since a swapped file runs code when it is
    loaded: one finding at the first of them, the others listed as related
    locations. The other downloads (text, images, JSON, TensorFlow
    checkpoints, safetensors: public files read without an unpickler) are one
    advice at the first of them, hidden by default: a checksum there guards
    against truncation and tampering of data, not code execution. A project whose
    every download is a GitHub release asset of its own repository (named by
    its `setup.py`/`setup.cfg`/`pyproject.toml` URLs or its README badges;
    never looked up on the network), or of the repository of a package the
    downloading file imports, is not reported: whoever can replace those
    assets can already change the code that runs, so a pinned hash adds
    nothing there.
    """

    code = "TR105"
    name = "download-without-integrity-check"
    severity = Severity.MEDIUM
    severity_reason = (
        "Code execution when the downloaded file is unpickled (a defect); otherwise data integrity: "
        "a tampered or truncated download poisons training silently but runs no code (advice)."
    )
    scope = ("project",)
    summary = "data downloaded over the network with no checksum verification in the project"
    summarize = "project"

    @classmethod
    def repeat_key(cls, finding) -> str:
        """The downloads that end in an unpickler are one finding."""
        return f"{cls.code}:{finding.kind}"

    def check_project(self, project) -> None:
        downloaders = [f for f in project.files if f.downloads]
        if not downloaders or any(f.checks_hashes for f in project.files):
            return
        if all(project.trusted_release(d.url, f) for f in downloaders for d in f.downloads):
            return  # only the project's own release assets: whoever can swap them can change the code
        checked = f"no `hashlib`/`check_integrity` use found in {len(project.files)} file(s)"
        plain = None  # the first download read without an unpickler: one advice for the project
        for f in sorted(downloaders, key=lambda f: f.path):
            for download in f.downloads:
                anchor = download.anchor
                if download.unpickled:
                    project.report(anchor, "this file is fetched over the network and then unpickled in this "
                                           f"module, and no checksum is verified ({checked}): a swapped or "
                                           "tampered file runs code when it is loaded; pin a SHA-256 (or "
                                           "`hash_prefix=`/`md5=`) and compare it before loading",
                                   kind="defect")
                elif plain is None:
                    plain = anchor
        if plain is not None:
            project.report(plain, f"data is fetched over the network and no checksum is verified ({checked}): "
                                  "a truncated or tampered file would go unnoticed; pin a SHA-256 (or "
                                  "`hash_prefix=`/`md5=`) and compare it before using the file", kind="advice")
