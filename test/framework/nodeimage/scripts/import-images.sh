# Imports the control plane's OCI images into the image's containerd (namespace k8s.io) while
# the image is built: containerd runs in the root (systemd-nspawn, not booted) for this alone.
set -euo pipefail
containerd --log-level warn &
containerd_pid=$!
for _ in $(seq 1 300); do
  ctr version >/dev/null 2>&1 && break
  sleep 0.1
done
ctr --namespace k8s.io images import /var/tmp/cabpi-images.tar
ctr --namespace k8s.io images list --quiet
kill "$containerd_pid"
wait "$containerd_pid" || true
