"""``torchreview server``: a Language Server (LSP over stdio) built on pygls.

pygls is an optional extra (``pip install 'torchreview[lsp]'``): it is imported
only when the server starts, so the base install and ``torchreview --version``
never need it. The review itself (``lsp.analysis``) is plain torchreview and
works on the editor's buffer text: nothing is imported or executed.
"""

from __future__ import annotations

import sys


def serve() -> int:
    """Run the server on stdin/stdout until the client says exit."""
    try:
        import pygls  # noqa: F401
        import lsprotocol  # noqa: F401
    except ImportError:
        sys.stderr.write("torchreview: error: `torchreview server` needs pygls: "
                         "pip install 'torchreview[lsp]' (or pip install 'pygls>=2')\n")
        return 2
    from torchreview.lsp.server import build_server

    build_server().start_io()
    return 0
