"""The connector's test helpers (connector_process.py) are importable from its test modules."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.append(HERE)
