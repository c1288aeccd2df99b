"""Scripted experts: `native.NativePickPlaceExpert` for the native tasks (pick_place, stack3) and
`robosuite_experts` for the robosuite tasks. `sim.policies.make_expert(env)` picks the right one."""
