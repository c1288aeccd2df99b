"""Online refinement of a pretrained policy: one resumable loop (`loop.py`) driving methods that are
units (`method.py`): HABC, RaC, HG-DAgger, DAgger, SFT, filtered BC, AWR, PA-RL and DSRL in
`methods/`, imagination and ReGuide in worldmodel/, all found by name in `vla.registry.REFINE_METHODS`."""
