"""Precompute the MiniLM embeddings of every instruction a device job can meet, into .dev/: the package
that holds the weights (87 MB) is over the device's 64 MiB carry limit. Run here, before the job:

  python tools/device/make_table.py
"""

import json
from pathlib import Path

import numpy as np

from sim.tasks.native.pick_place import PickPlaceEnv
from sim.tasks.native.sort import (
    AUGMENT_TEMPLATES,
    GOALS,
    HELDOUT_TEMPLATES,
    TRAIN_TEMPLATES,
    instruction_aliases,
    instruction_for,
)
from sim.tasks.native.stack3 import Stack3Env
from vla.policy.language import InstructionEncoder

# the neutral ablation, the tests' strings and bench_policy's instruction
TESTS = {"do the task", "follow the line", "a", "b", "lift the cube"}

texts = {instruction_for(g, t) for g in GOALS for t in (*TRAIN_TEMPLATES, *HELDOUT_TEMPLATES, *AUGMENT_TEMPLATES)}
try:  # Meta-World's phrasings (job_mw.py), where metaworld is installed
    from sim.tasks.metaworld_tasks import INSTRUCTIONS as MW_INSTRUCTIONS

    texts |= {t for phrasings in MW_INSTRUCTIONS.values() for t in phrasings}
except ImportError:
    pass
# the other native tasks' own phrasings (job_pp.py: pick_place)
texts |= set(PickPlaceEnv.INSTRUCTIONS) | set(Stack3Env.INSTRUCTIONS)
texts = sorted(texts | TESTS)
emb = InstructionEncoder().encode(texts)
Path(".dev").mkdir(exist_ok=True)
np.savez(".dev/instructions.npz", texts=np.array(texts), emb=emb)
Path(".dev/aliases.json").write_text(json.dumps(instruction_aliases(), indent=1))
print(f"{len(texts)} instructions -> .dev/instructions.npz")
