#!/usr/bin/env bash
# Renders each overlay into deploy/k8s/rendered/<overlay>.yaml with kustomize (kubectl's built-in one), for
# clusters applied without kustomize (kubectl apply -f rendered/cpu.yaml) and for ManifestsTest, which parses
# these files and, where kubectl is installed, fails if one differs from a fresh rendering.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mkdir -p rendered
for overlay in cpu gpu api-discovery; do
  { echo "# Rendered from deploy/k8s/overlays/$overlay by deploy/k8s/render.sh (kubectl kustomize); do not edit."
    kubectl kustomize "overlays/$overlay"; } > "rendered/$overlay.yaml"
done
