import mujoco
import numpy as np
import pytest

from sim.render import MultiCameraRenderer, make_fast
from vla.robot.arm import build_model


def test_make_fast_turns_off_shadows_and_multisampling():
    m = build_model("")
    m.vis.quality.shadowsize = 4096
    m.vis.quality.offsamples = 4
    m.light_castshadow[:] = 1
    make_fast(m, 64, 48)
    assert m.vis.quality.shadowsize == 0 and m.vis.quality.offsamples == 0
    assert not m.light_castshadow.any()
    assert (m.vis.global_.offwidth, m.vis.global_.offheight) == (64, 48)


def test_renders_each_camera_upright_at_the_requested_size():
    m = build_model("")
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    r = MultiCameraRenderer(m, ("agentview", "birdview"), 48, 64)
    imgs = r.render(d)
    assert set(imgs) == {"agentview", "birdview"}
    for img in imgs.values():
        assert img.shape == (48, 64, 3) and img.dtype == np.uint8
    assert not np.array_equal(imgs["agentview"], imgs["birdview"])
    # agentview looks down at the table from above: the bottom rows see the table (brown), the top
    # rows the empty background (black) -- so the image is not flipped.
    top, bottom = imgs["agentview"][:4].mean(), imgs["agentview"][-4:].mean()
    assert bottom > top + 20
    # The returned arrays are copies: a second render does not overwrite the first.
    first = imgs["agentview"].copy()
    d.qpos[:7] += 0.5
    mujoco.mj_forward(m, d)
    r.render(d)
    np.testing.assert_array_equal(imgs["agentview"], first)
    r.close()


def test_side_by_side_matches_rendering_each_camera_alone():
    m = build_model("")
    make_fast(m, 84, 84)
    d = mujoco.MjData(m)
    d.qpos[:7] = [0.3, 0.5, 0.0, 1.5, 0.0, 1.0, 0.0]
    mujoco.mj_forward(m, d)
    cams = ("agentview", "robot0_eye_in_hand", "birdview")
    together = MultiCameraRenderer(m, cams, 84).render(d)
    for cam in cams:
        alone = MultiCameraRenderer(m, (cam,), 84).render(d)[cam]
        # Exactly equal: each view gets its own headlight, nothing bleeds across the viewports.
        np.testing.assert_array_equal(together[cam], alone)


def test_closing_one_renderer_leaves_another_intact() -> None:
    # A renderer freed (closed or garbage-collected) while another renderer's GL context was
    # current used to free that one's buffers: every later image of it was noise. Envs made one
    # after another in one process (task loops, benchmarks) hit this.
    m = build_model("")
    make_fast(m, 84, 84)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    first = MultiCameraRenderer(m, ("agentview",), 84)
    reference = first.render(d)["agentview"]
    second = MultiCameraRenderer(m, ("agentview",), 84)
    first.close()
    np.testing.assert_array_equal(second.render(d)["agentview"], reference)
    third = MultiCameraRenderer(m, ("agentview",), 84)
    del second  # freed by the garbage collector, not by close()
    np.testing.assert_array_equal(third.render(d)["agentview"], reference)
    third.close()


def test_unknown_camera_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown camera 'top'.*agentview"):
        MultiCameraRenderer(build_model(""), ("top",), 32)


def test_frustum_culling_changes_no_pixel() -> None:
    """Geoms outside a camera's frustum are skipped (the wrist camera sees little of the scene),
    and the images are exactly those rendered with every geom drawn."""
    m = build_model("")
    make_fast(m, 84, 84)
    d = mujoco.MjData(m)
    cams = ("agentview", "robot0_eye_in_hand", "birdview")
    culled = MultiCameraRenderer(m, cams, 84)
    full = MultiCameraRenderer(m, cams, 84, cull=False)
    wrist = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, "robot0_eye_in_hand")
    skipped = 0
    for q in ([0.0, 0.2, 0.0, -1.5, 0.0, 1.9, 0.8], [0.3, 0.5, 0.0, 1.5, 0.0, 1.0, 0.0],
              [-0.6, -0.2, 0.4, -2.2, 0.3, 2.4, -0.5]):
        d.qpos[:7] = q
        mujoco.mj_forward(m, d)
        a, b = culled.render(d), full.render(d)
        for cam in cams:
            np.testing.assert_array_equal(a[cam], b[cam])
        assert culled._culler is not None
        skipped += int(culled._culler.outside(d, wrist).sum())
    assert skipped > 0
    # The model's geom groups are restored after each culled scene update.
    groups = m.geom_group.copy()
    culled.render(d)
    np.testing.assert_array_equal(m.geom_group, groups)
    culled.close()
    full.close()


def test_cluster_faces_merges_vertices_within_a_cell_and_drops_collapsed_faces() -> None:
    from sim.render import cluster_faces

    # a 4 x 4 grid of vertices 1 cm apart on a plane, 18 triangles
    xs, ys = np.meshgrid(np.arange(4) * 0.01, np.arange(4) * 0.01)
    verts = np.stack([xs.ravel(), ys.ravel(), np.zeros(16)], 1)
    faces = []
    for i in range(3):
        for j in range(3):
            a, b, c, d = 4 * i + j, 4 * i + j + 1, 4 * (i + 1) + j, 4 * (i + 1) + j + 1
            faces += [(a, b, c), (b, d, c)]
    faces = np.array(faces)
    same, keep = cluster_faces(verts, faces, 1e-4)  # a cell far below the spacing changes nothing
    assert keep.all()
    np.testing.assert_array_equal(same, faces)
    coarse, keep = cluster_faces(verts + 0.001, faces, 0.02)  # 2 x 2 vertices per cell
    assert 0 < keep.sum() < len(faces)
    kept = coarse[keep]
    assert set(kept.ravel()) <= {0, 2, 8, 10}  # one representative per cell, a vertex of the mesh
    assert (kept[:, 0] != kept[:, 1]).all() and (kept[:, 1] != kept[:, 2]).all() and (kept[:, 0] != kept[:, 2]).all()
    with pytest.raises(ValueError, match="cell"):
        cluster_faces(verts, faces, 0.0)
    with pytest.raises(ValueError, match=r"\[n, 3\]"):
        cluster_faces(verts[:, :2], faces, 0.01)


def test_coarse_meshes_draw_fewer_triangles_and_nearly_the_same_image() -> None:
    pytest.importorskip("metaworld")
    from vla.registry import TASKS

    env = TASKS.make("mw_drawer_open", cameras=("corner2",), image_size=84, mesh_cell=0.0)
    env.reset(seed=3)
    full = env.unwrapped._obs()["images"]["corner2"]
    r = env.unwrapped._renderer
    assert r.mesh_faces[0] == r.mesh_faces[1]
    env.close()
    env = TASKS.make("mw_drawer_open", cameras=("corner2",), image_size=84, mesh_cell=0.01)
    env.reset(seed=3)
    coarse = env.unwrapped._obs()["images"]["corner2"]
    r = env.unwrapped._renderer
    assert r.mesh_faces[1] < 0.5 * r.mesh_faces[0]
    diff = np.abs(full.astype(int) - coarse.astype(int))
    assert diff.any() and diff.mean() < 2.0  # the coarse arm is drawn, and it still looks like the arm
    env.close()
    with pytest.raises(ValueError, match="mesh_cell"):
        MultiCameraRenderer(build_model(""), ("agentview",), 32, mesh_cell=-1.0)
