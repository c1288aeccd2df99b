"""A writer process for the crash test: appends synthetic episode i (seeded by its index) forever.

Run as `python kill_writer.py STORE`; prints READY once the store is open, then COMMITTED after
every episode it appends, until killed.
"""

import sys

from vla.data.store import EpisodeStore
from vla.data.synthetic import synthetic_episode

store = EpisodeStore.open(sys.argv[1], mode="a")
print("READY", store.n_episodes, flush=True)
while True:
    store.append_episode(synthetic_episode(store.schema, seed=store.n_episodes))
    print("COMMITTED", store.n_episodes, flush=True)
