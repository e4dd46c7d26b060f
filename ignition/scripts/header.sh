#!/bin/bash
# cabpi bootstrap, run by kubeadm.service. Any failure stops it before the success sentinel.
set -euo pipefail
export PATH="${PATH:+${PATH}:}/opt/bin"
