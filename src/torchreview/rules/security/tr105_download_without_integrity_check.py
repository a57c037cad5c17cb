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
    downloads here. Reported once, at the first download. A project whose
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
        "Data integrity: a tampered or truncated download poisons training silently, but runs no "
        "code."
    )
    scope = ("project",)
    summary = "data downloaded over the network with no checksum verification in the project"

    def check_project(self, project) -> None:
        downloaders = project.files_with("downloads_data")
        if not downloaders or project.any_flag("hash_check"):
            return
        if all(f.download_urls and len(f.download_urls) == f.counts.get("downloads", 0) and
               all(project.trusted_release(url, f) for url in f.download_urls) for f in downloaders):
            return  # only the project's own release assets: whoever can swap them can change the code
        first = sorted(downloaders, key=lambda f: f.path)[0]
        anchor = first.anchors["download"]
        total = sum(f.counts.get("downloads", 0) for f in downloaders)
        others = f" ({total} downloads in {len(downloaders)} file(s))" if total > 1 else ""
        project.report(anchor, f"data is fetched over the network{others} and no checksum is verified: "
                               f"no `hashlib`/`check_integrity` use found in {len(project.files)} file(s); "
                               "pin a SHA-256 (or `hash_prefix=`/`md5=`) and compare it before using the file")
