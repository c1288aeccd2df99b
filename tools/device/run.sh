# the device command: system GL loaders, the carried wheels, then the job
T=$(date +%s)
if [ -d .gl ] && [ "$(id -u)" = 0 ]; then for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; fi
if [ -z "${SKIP_WHL:-}" ] && [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/tools/device/site:$PWD
else
  export PYTHONPATH=$PWD/tools/device/site:$PWD
fi
# the package is not installed there: its entry points (vla/plugins.py finds sim/, real/, worldmodel/ by them)
# from pyproject.toml into a stub dist-info on the path
META=/tmp/vla_meta/vla_stack-0.1.0.dist-info
mkdir -p $META && printf 'Metadata-Version: 2.1\nName: vla-stack\nVersion: 0.1.0\n' > $META/METADATA
python3 -c "import tomllib; e = tomllib.load(open('pyproject.toml', 'rb'))['project']['entry-points']
print(''.join(f'[{g}]\n' + ''.join(f'{k} = {v}\n' for k, v in eps.items()) for g, eps in e.items()))" > $META/entry_points.txt
export PYTHONPATH=$PYTHONPATH:/tmp/vla_meta
[ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] && export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 VLA_INSTRUCTION_TABLE=$PWD/.dev/instructions.npz
export MUJOCO_GL=${MUJOCO_GL:-egl} PYOPENGL_PLATFORM=${PYOPENGL_PLATFORM:-egl}
echo "setup $(( $(date +%s) - T )) s"
python3 -c "import mujoco, zarr, numcodecs, omegaconf, gymnasium, OpenGL; print('imports ok, mujoco', mujoco.__version__)" || exit 1
python3 tools/device/${JOB:-job_sort.py}
