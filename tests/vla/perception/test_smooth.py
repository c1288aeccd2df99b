import numpy as np
import pytest

from vla.perception.smooth import StaticSmoother, ema_update, gated_update
from vla.robot.objects import static_objects


def test_ema_starts_at_the_first_reading_and_weights_the_newest_by_alpha() -> None:
    m = ema_update(None, np.array([1.0, 0.0]), 0.25)
    np.testing.assert_allclose(m, [1.0, 0.0])
    np.testing.assert_allclose(ema_update(m, np.array([0.0, 4.0]), 0.25), [0.75, 1.0])


def test_only_static_objects_are_averaged_and_reset_forgets() -> None:
    s = StaticSmoother(("cube", "zone"), ("zone",), alpha=0.5)
    a = np.zeros((2, 7))
    a[:, 6] = 1
    b = a.copy()
    b[:, 0] = 0.02  # both read 2 cm further along x
    s(a)
    out = s(b)
    assert out[0, 0] == pytest.approx(0.02)  # the cube moves: its reading as it is
    assert out[1, 0] == pytest.approx(0.01)  # the zone: half of the newest reading
    assert out[1, 6] == 1.0 and b[1, 0] == 0.02  # orientation untouched, the input not modified
    s.reset()
    assert s(b)[1, 0] == pytest.approx(0.02)


def test_a_smoother_over_noisy_readings_of_a_still_object_has_less_error() -> None:
    rng = np.random.default_rng(0)
    s = StaticSmoother(("zone",), ("zone",), alpha=0.1)
    readings = np.zeros((200, 1, 7))
    readings[..., :3] = rng.normal(0, 0.01, (200, 1, 3))
    smoothed = np.stack([s(r) for r in readings])
    assert np.abs(smoothed[50:, 0, :3]).std() < 0.4 * np.abs(readings[50:, 0, :3]).std()


def test_bad_settings_are_refused_and_pick_place_s_zone_is_static() -> None:
    with pytest.raises(ValueError, match="alpha"):
        StaticSmoother(("zone",), ("zone",), alpha=0.0)
    with pytest.raises(ValueError, match="not among"):
        StaticSmoother(("cube",), ("zone",), alpha=0.5)
    assert static_objects("pick_place") == ("zone",)


def test_an_object_at_rest_is_averaged_until_it_jumps_past_the_gate() -> None:
    assert gated_update(None, np.array([1.0, 0.0, 0.0]), 0.5, 0.02).tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(gated_update(np.zeros(3), np.array([0.01, 0, 0]), 0.5, 0.02), [0.005, 0, 0])
    np.testing.assert_allclose(gated_update(np.zeros(3), np.array([0.03, 0, 0]), 0.5, 0.02), [0.03, 0, 0])
    s = StaticSmoother(("cube", "zone"), ("zone",), alpha=0.5, rest=("cube",), gate=0.02)
    a = np.zeros((2, 7))
    a[:, 6] = 1
    near, lifted = a.copy(), a.copy()
    near[:, 0] = 0.01
    lifted[0, 2] = 0.05  # the cube 5 cm up: it moved, so it is read as it is
    s(a)
    assert s(near)[0, 0] == pytest.approx(0.005)
    assert s(lifted)[0, 2] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="gate > 0"):
        StaticSmoother(("cube",), (), alpha=0.5, rest=("cube",))
