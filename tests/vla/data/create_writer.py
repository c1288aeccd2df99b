"""A child process for the create / overwrite kill tests.

`python create_writer.py create PATH [overwrite]`: prints READY, then creates the store at PATH
(replacing it with overwrite) in a loop, printing CREATED after each, until killed.
`python create_writer.py race PATH SECONDS`: for SECONDS, replaces the store with
create(overwrite=True), counting refusals (the writer lock held) and successes; prints the counts.
`python create_writer.py append PATH SECONDS`: for SECONDS, opens the store for writing, appends
synthetic episode n (seeded by its index) and closes it, counting refusals; prints the counts.
"""

import sys
import time
from pathlib import Path

from vla.data.store import EpisodeStore, StoreError
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=16)
mode, path = sys.argv[1], Path(sys.argv[2])
if mode == "create":
    overwrite = len(sys.argv) > 3 and sys.argv[3] == "overwrite"
    print("READY", flush=True)
    while True:
        EpisodeStore.create(path, SCHEMA, overwrite=overwrite, image_chunk=8, lowdim_chunk=64).close()
        print("CREATED", flush=True)
        overwrite = True
else:
    end, done, refused = time.monotonic() + float(sys.argv[3]), 0, 0
    while time.monotonic() < end:
        try:
            if mode == "race":
                EpisodeStore.create(path, SCHEMA, overwrite=True, image_chunk=8, lowdim_chunk=64).close()
            else:
                with EpisodeStore.open(path, mode="a") as store:
                    store.append_episode(synthetic_episode(SCHEMA, seed=store.n_episodes))
            done += 1
        except StoreError as e:  # locked, replaced meanwhile, or briefly absent during a swap
            refused += 1
            expected = ("another process", "replaced", "no episode store", "meanwhile", "writer lock")
            if not any(s in str(e) for s in expected):
                raise
        # A short pause between rounds, as real writers have: back to back, on a loaded 2-core machine
        # the appender held the lock in every round the racer tried (0 of 15,160 overwrites won).
        time.sleep(0.01 if mode == "append" else 0.002)
    print("DONE", done, refused, flush=True)
