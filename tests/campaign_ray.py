"""A campaign on a local Ray cluster, in a process of its own: `python campaign_ray.py CORPUS OUT SECONDS`.

The campaign test starts it first and reads its records last, so that Ray's start-up (many
seconds on a small machine) overlaps the other tests, and Ray's processes never share the test
process. It starts the cluster itself (`--ray local`: `ray.init(address="local")`) and stops it
when done; each record is printed as one JSON line.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from campaign_corpus import MisTarget  # noqa: E402

from irscatter.debug.campaign import Settings, Store, run_campaign  # noqa: E402


def main() -> None:
    corpus, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    settings = Settings(target=MisTarget.name, timeout=seconds, memory_mb=500)
    for record in run_campaign([corpus], settings, store=Store(":memory:"), out=out, factory=MisTarget, ray="local"):
        print(json.dumps(record.to_json()), flush=True)


if __name__ == "__main__":
    main()
