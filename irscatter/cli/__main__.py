"""`python -m irscatter.cli`, as the `irscatter` command."""

import sys

from irscatter.cli import main

sys.exit(main())
