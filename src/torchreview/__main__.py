import sys

from torchreview.cli import main

if __name__ == "__main__":
    sys.exit(main())
