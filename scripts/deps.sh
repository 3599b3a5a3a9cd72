#!/usr/bin/env bash
# Installs every Debian package that Tephra's build, tests and benchmarks need on a fresh
# Debian bookworm machine. Idempotent: when everything is present it only runs dpkg queries.
set -euo pipefail

PKGS=(
  # build
  cmake g++ make pkg-config git ccache
  # sanitizer stage: clang for TSan and -Wthread-safety (scripts/test.sh)
  clang libclang-rt-14-dev
  # libraries (each behind one adapter, see docs/ARCHITECTURE.md)
  libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libboost-system-dev libboost-dev zlib1g-dev libcpp-httplib-dev libbrotli-dev libre2-dev libcctz-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # real control plane (tests/e2e): etcd, and the tools that build kube-apiserver & co from Debian source
  etcd-server etcd-client golang-go golang-github-modern-go-reflect2-dev rsync jq openssl curl unzip
  dpkg-dev ca-certificates procps iproute2 psmisc
  # e2e helpers: port picking in tests/e2e/cluster.sh, sent-vs-stored comparison (tests only, not the product)
  python3 python3-yaml
  # dashboards e2e (tests/e2e/observability/prometheus_test.sh): a real Prometheus scrapes every role and
  # answers each Grafana panel's query (charts/tephra/dashboards/)
  prometheus
  # web view e2e (tests/e2e/webview): a real browser, headless, driven over the DevTools protocol
  chromium python3-websocket
  # container image (image/build.sh, tests/image): distroless root filesystem, OCI assembly, strip, rootless runs
  mmdebstrap debian-archive-keyring umoci skopeo binutils bubblewrap
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: all ${#PKGS[@]} packages present"
fi

# etcd-server's package starts a system etcd on 2379; our harness uses its own ports, but a stray
# system instance wastes memory, so stop it if a service manager started it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi
# Likewise the packaged Prometheus (:9090) and, if a previous install pulled it in as a recommendation, its
# node exporter (:9100): the dashboards e2e runs its own Prometheus on a free port with a temporary store.
for svc in prometheus prometheus-node-exporter; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
  elif [ -x "/etc/init.d/$svc" ] && "/etc/init.d/$svc" status >/dev/null 2>&1; then
    $SUDO "/etc/init.d/$svc" stop || true
  fi
done
