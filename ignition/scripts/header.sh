#!/bin/bash
# Written by cabpi; run once at first boot by kubeadm.service.
# Any failing command stops the bootstrap before the success sentinel is written.
set -euo pipefail
