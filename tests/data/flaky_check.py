"""A check that fails on a model holding a Divide, except on every third call: a flaky runtime."""

import sys
from pathlib import Path

counter = Path(sys.argv[2])
calls = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(calls + 1))
has_divide = 'type="Divide"' in Path(sys.argv[1]).read_text()
sys.exit(1 if has_divide and calls % 3 != 2 else 0)
