#!/usr/bin/env bash
# The README's two commands on a fresh Debian machine: a clean bookworm root filesystem (debootstrap
# --variant=minbase, plus only python3, python3-venv, make, git and ca-certificates: "Debian with Python
# 3.11 and nothing else"), the committed tree (git archive HEAD) copied in, then `make install`,
# `make run` and `make test` inside it with chroot, each timed. Nothing is installed by hand: what
# the stack needs beyond that (libosmesa6, the wheels) its own install step fetches.
#
# Usage (as root): benchmarks/fresh_env.sh [ROOTFS] [run|test|both]   (default /tmp/fresh, both)
# An existing ROOTFS is reused after purging what a previous run installed (libosmesa6 and the
# venv), so that it is fresh again. Times go to ROOTFS/root/times.txt and the logs beside it, and
# from there to benchmarks/results/fresh_env.json (benchmarks/fresh_env_result.py).
# The machine's pip configuration, wheel folders and local CAs (/etc/xdg/pip, /opt/wheels, /opt/pypi,
# /usr/local/share/ca-certificates), where present, are bound in read-only: they are part of this
# machine, as they are of CI's.
set -euo pipefail
ROOTFS=${1:-/tmp/fresh}
WHAT=${2:-both}
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "fresh_env.sh: run as root (debootstrap, chroot and mount need it)" >&2; exit 1; }

if [ ! -x "$ROOTFS/usr/bin/python3" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  debootstrap --variant=minbase bookworm "$ROOTFS" http://deb.debian.org/debian
  cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
  chroot "$ROOTFS" apt-get install -y -qq --no-install-recommends python3 python3-venv make git ca-certificates
fi
# debootstrap writes no /etc/hosts; an installed Debian has one naming localhost and the machine's
# own name (torchrun --standalone resolves the hostname: without it the rendezvous hangs)
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" > "$ROOTFS/etc/hosts"

mounts=(proc sys dev)  # sys: without it OpenMP sees one core and torch trains on one thread
# the machine's local CAs too (a TLS-inspecting egress proxy in front of the package registries):
# machine configuration, as the pip configuration is, made the chroot's trust below, outside the timing
for d in /opt/wheels /opt/pypi /etc/xdg/pip /usr/local/share/ca-certificates; do [ -d "$d" ] && mounts+=("${d#/}"); done
cleanup() { for m in "${mounts[@]}"; do umount -R "$ROOTFS/$m" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
for m in "${mounts[@]}"; do
  mkdir -p "$ROOTFS/$m"
  mount --rbind "/$m" "$ROOTFS/$m"  # with its submounts: /dev/shm (the data loader's shared memory)
  case $m in proc|sys|dev) ;; *) mount -o remount,bind,ro "$ROOTFS/$m" ;; esac
done

[ -d /usr/local/share/ca-certificates ] && chroot "$ROOTFS" update-ca-certificates >/dev/null 2>&1
# fresh again: nothing a previous run installed (the system packages tools/system-deps adds)
chroot "$ROOTFS" bash -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libosmesa6 libgl1 libglib2.0-0 libxcb1 chromium >/dev/null 2>&1; apt-get autoremove -y -qq >/dev/null 2>&1; true'
rm -rf "$ROOTFS/root/vla"
mkdir -p "$ROOTFS/root/vla"
git -C "$SRC" archive HEAD | tar -x -C "$ROOTFS/root/vla"
git -C "$SRC" rev-parse --short=10 HEAD > "$ROOTFS/root/commit.txt"  # what the figures were measured on

cat > "$ROOTFS/root/go.sh" <<EOF
#!/bin/bash
cd /root/vla
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
: > /root/times.txt
step() {  # name, command...
  local name=\$1; shift
  local s=\$(date +%s); "\$@" > /root/\$name.log 2>&1; local rc=\$?
  echo "\$name rc=\$rc \$((\$(date +%s) - s)) s" >> /root/times.txt
  return \$rc
}
step make_install make install || exit 1
case "$WHAT" in
  run) step make_run make run ;;
  test) step make_test make test ;;
  *) step make_run make run; step make_test make test ;;
esac
EOF
chmod +x "$ROOTFS/root/go.sh"
chroot "$ROOTFS" /root/go.sh || true
cat "$ROOTFS/root/times.txt"
# the figures, by code: benchmarks/results/fresh_env.json (with the host's python: the chroot's venv is gone
# at the next run)
PY=python3; [ -x "$SRC/.venv/bin/python" ] && PY="$SRC/.venv/bin/python"  # results_io reads vla.protocol
"$PY" "$SRC/benchmarks/fresh_env_result.py" "$ROOTFS"
