#!/usr/bin/env bash
# Writes prometheusrule.yaml from deploy/monitoring/prometheus/rules/kiln-alerts.yml: the PrometheusRule's spec is
# that file's groups, unchanged, so the operator's rules are the ones promtool checks and tests. MonitoringObjectsTest
# fails if the committed file differs from what this makes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
rules=../../monitoring/prometheus/rules/kiln-alerts.yml
{
  echo "# Generated from deploy/monitoring/prometheus/rules/kiln-alerts.yml by deploy/k8s/monitoring/generate.sh; do not edit."
  echo "apiVersion: monitoring.coreos.com/v1"
  echo "kind: PrometheusRule"
  echo "metadata:"
  echo "  name: kiln"
  echo "  labels:"
  echo "    app.kubernetes.io/name: kiln"
  echo "spec:"
  grep -v '^#' "$rules" | sed -e 's/^\(.\)/  \1/'
} > prometheusrule.yaml
