"""`python -m stream_worker.contracts [--check]`: write (or check) schemas/*.schema.json."""

from __future__ import annotations

import sys

from stream_worker.contracts.schemas import SCHEMAS_DIR, export_schemas

if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    names = export_schemas(check=check)
    if check and names:
        sys.exit(
            f"stale schema files in {SCHEMAS_DIR}: {', '.join(names)} (run python -m stream_worker.contracts)"
        )
    print(f"{'stale' if check else 'wrote'}: {', '.join(names) or 'nothing, all up to date'}")
