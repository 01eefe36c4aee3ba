"""`python -m harness.broker --config server.properties [--override key=value ...]`."""

from __future__ import annotations

import sys

from harness.broker.main import main

if __name__ == "__main__":
    sys.exit(main())
