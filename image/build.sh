#!/usr/bin/env bash
# Builds Tephra's container image (one image for every role) without a registry or a Docker daemon, with
# Debian's tools only: mmdebstrap makes a distroless root filesystem of exactly the runtime libraries the
# binary links (cached), umoci assembles the OCI image, GNU tar makes the oci-archive. See docs/image.md.
#
# Usage: image/build.sh [--binary PATH] [--out DIR] [--rebuild-base] [--derive-packages]
#   --binary PATH       the tephra binary to ship (default: build/bin/tephra); shipped stripped of debug info
#   --out DIR           output directory (default: build/image/), gets:
#                         tephra-oci/                OCI image layout, ref docker.io/tephra/tephra:<version>
#                         tephra-<version>.oci.tar   the same as an oci-archive (skopeo/podman/ctr/kind load it)
#                         image.json                 digests, sizes, reference, package versions
#   --rebuild-base      ignore the cached base layer (e.g. to pick up Debian security updates)
#   --derive-packages   print the runtime packages the binary needs on this host (ldd + dpkg -S) and exit
# Env: TEPHRA_CACHE (default ~/.cache/tephra) holds image-base-<hash>/; SOURCE_DATE_EPOCH overrides the
#      timestamp (default: the commit time of the binary's commit, else of HEAD).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

SUITE=bookworm   # from deb.debian.org with bookworm-updates and bookworm-security (mmdebstrap's default)
REPO=docker.io/tephra/tephra
UID_GID=65532:65532

# The runtime packages: every shared library `tephra` links (ldd, then dpkg -S on the bookworm build host;
# `image/build.sh --derive-packages` redoes that derivation). mmdebstrap also resolves their hard dependencies;
# the build fails if that adds a package not listed here, and if the binary needs a library none provides.
RUNTIME_PKGS=(
  libc6               # libc.so.6 libm.so.6 libpthread.so.0, the loader ld-linux-x86-64.so.2, NSS modules
  libgcc-s1           # libgcc_s.so.1
  gcc-12-base         # no library: a dependency of libgcc-s1/libstdc++6 (their copyright file only)
  libstdc++6          # libstdc++.so.6
  libssl3             # libssl.so.3 libcrypto.so.3 (OpenSSL: TLS to the API server, the webhook's HTTPS)
  libcpprest2.10      # libcpprest.so.2.10 (cpprestsdk: the Kubernetes REST client)
  libcpp-httplib0.11  # libcpp-httplib.so.0.11 (the /metrics /healthz and webhook server)
  libspdlog1.10       # libspdlog.so.1.10 (logging)
  libfmt9             # libfmt.so.9 (spdlog's formatter)
  libyaml-cpp0.7      # libyaml-cpp.so.0.7 (kubeconfig)
  libbrotli1          # libbrotlicommon/dec/enc.so.1 (cpp-httplib's compression)
  zlib1g              # libz.so.1 (cpprestsdk, cpp-httplib)
  libre2-9            # libre2.so.9 (HyperNode regexMatch with Go's semantics: pattern/)
  libcctz2            # libcctz.so.2 (CronJob timeZone: tz/)
)
# Data-only packages: fetched without their dependencies (those serve only their maintainer scripts: debconf,
# perl, openssl) and reduced to their data by image/base-hook.sh.
DATA_PKGS=(
  ca-certificates     # /etc/ssl/certs/ca-certificates.crt, generated as update-ca-certificates would
  base-files          # /etc/os-release, /etc/debian_version (image scanners identify the distribution)
  tzdata              # /usr/share/zoneinfo: CronJob spec.timeZone (tz/ reads it through cctz)
)
# Every file of the base layer gets this mtime, so the same package versions give the same layer digest.
BASE_EPOCH=0

die() { echo "image/build.sh: error: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found: install the Debian package '$2' (apt-get install $2, or bash scripts/deps.sh)"; }

BIN=$ROOT/build/bin/tephra
OUT=$ROOT/build/image
REBUILD_BASE=0
DERIVE=0
while [ $# -gt 0 ]; do
  case $1 in
    --binary) BIN=${2:?--binary needs a path}; shift 2 ;;
    --binary=*) BIN=${1#*=}; shift ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    --rebuild-base) REBUILD_BASE=1; shift ;;
    --derive-packages) DERIVE=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ -e "$BIN" ] || die "no tephra binary at $BIN: build it first (cmake --build build -j2 --target tephra) or pass --binary PATH"
[ -x "$BIN" ] && [ -f "$BIN" ] || die "$BIN is not an executable file"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# Shared libraries the binary needs on this host, and the Debian packages that own them.
derive_packages() {
  ldd "$BIN" | awk '/=>/ {print $3} /^[[:space:]]*\// {print $1}' | while read -r lib; do
    [ -e "$lib" ] || continue
    dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || echo "?: $lib (not from a package)"
  done | sed 's/:.*//' | sort -u
}
if [ "$DERIVE" = 1 ]; then
  need dpkg dpkg
  derive_packages
  exit 0
fi

need mmdebstrap mmdebstrap
need umoci umoci
need objcopy binutils
need readelf binutils
need jq jq
need dpkg-deb dpkg
need apt-get apt
need sha256sum coreutils
need gzip gzip
tar --version 2>/dev/null | grep -q 'GNU tar' || die "GNU tar not found: install the Debian package 'tar'"
[ -r /usr/share/keyrings/debian-archive-keyring.gpg ] ||
  die "Debian's archive keys not found: install the Debian package 'debian-archive-keyring'"

t_start=$(date +%s.%N)
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

# --- version, revision, timestamp ---------------------------------------------------------------------------
version_line=$("$BIN" version) || die "$BIN version failed"
# "tephra 0.1.0 (commit a4796ee209d8-dirty)"
VERSION=$(sed -n 's/^tephra \([^ ]*\).*/\1/p' <<<"$version_line")
REVISION=$(sed -n 's/.*(commit \([^)]*\)).*/\1/p' <<<"$version_line")
[ -n "$VERSION" ] || die "cannot read the version from '$version_line'"
REF=$REPO:$VERSION
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -c safe.directory="$ROOT" -C "$ROOT" show -s --format=%ct "${REVISION%-dirty}" 2>/dev/null ||
                      git -c safe.directory="$ROOT" -C "$ROOT" show -s --format=%ct HEAD 2>/dev/null || stat -c %Y "$BIN")
fi
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# --- base root filesystem (cached) --------------------------------------------------------------------------
HOOK=$ROOT/image/base-hook.sh
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
MMDEBSTRAP_ARGS=(
  --variant=extract                                   # unpack only: no maintainer scripts, no dpkg/apt/shell
  --include="$(IFS=,; echo "${RUNTIME_PKGS[*]}")"     # ... and their hard dependencies (checked below)
  # merged /usr, as every bookworm system has it (the loader is /lib64/ld-linux-x86-64.so.2)
  --setup-hook='for d in bin sbin lib lib64; do ln -s usr/$d "$1/$d"; mkdir -p "$1/usr/$d"; done'
  --extract-hook="bash '$HOOK' \"\$1\" '${DATA_PKGS[*]}'"
  --skip=output/dev --skip=cleanup/apt --skip=cleanup/mmdebstrap   # the hook removed apt's and dpkg's files
  "$SUITE"
)
key=$( { echo "$SUITE $BASE_EPOCH $(dpkg --print-architecture)"; printf '%s\n' "${MMDEBSTRAP_ARGS[@]}";
         printf '%s\n' "${DATA_PKGS[@]}"; cat "$HOOK"; } | sha256sum | cut -c1-16)
CACHE=${TEPHRA_CACHE:-$HOME/.cache/tephra}
BASE=$CACHE/image-base-$key
if [ "$REBUILD_BASE" = 1 ] || [ ! -f "$BASE/rootfs.tar" ]; then
  echo "image: building the base root filesystem with mmdebstrap ($SUITE, ${#RUNTIME_PKGS[@]} runtime packages) -> $BASE"
  mkdir -p "$CACHE"
  tmpbase=$(mktemp -d "$CACHE/.image-base-$key.XXXXXX")
  log=$tmpbase/mmdebstrap.log
  if ! SOURCE_DATE_EPOCH=$BASE_EPOCH mmdebstrap --quiet "${MMDEBSTRAP_ARGS[@]}" "$tmpbase/rootfs.tar" >"$log" 2>&1; then
    cat "$log" >&2
    rm -rf "$tmpbase"
    die "mmdebstrap failed (root, or a user with /etc/subuid ranges for its unshare mode, is needed; and deb.debian.org must be reachable)"
  fi
  rm -f "$log"
  rm -rf "$BASE"
  mv "$tmpbase" "$BASE"
else
  echo "image: base root filesystem from cache: $BASE"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
tar -xf "$BASE/rootfs.tar" -C "$work/base" --no-same-owner

# --- checks: the package set is the list; every library the binary needs is in it ---------------------------
dpkg-query --admindir="$work/base/var/lib/dpkg" -W -f '${Package}\t${Version}\n' | sort >"$work/packages.tsv"
expected=$(printf '%s\n' "${RUNTIME_PKGS[@]}" "${DATA_PKGS[@]}" | sort)
actual=$(cut -f1 "$work/packages.tsv")
if [ "$expected" != "$actual" ]; then
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  die "the base holds other packages than RUNTIME_PKGS + DATA_PKGS (lines '>' came in as dependencies): update the lists in image/build.sh"
fi

install -D -m 0755 "$BIN" "$work/app/usr/bin/tephra"
objcopy --strip-debug "$work/app/usr/bin/tephra"   # keeps the symbol table (readable backtraces), drops DWARF

libdirs=("lib/$MULTIARCH" "usr/lib/$MULTIARCH" lib usr/lib)
find_lib() {   # soname -> path inside the base, via the loader's default directories (no ld.so.cache)
  local d
  for d in "${libdirs[@]}"; do
    [ -e "$work/base/$d/$1" ] && { echo "$work/base/$d/$1"; return 0; }
  done
  return 1
}
interp=$(readelf -l "$work/app/usr/bin/tephra" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ -n "$interp" ] && { [ -L "$work/base$interp" ] || [ -e "$work/base$interp" ]; } &&
  find_lib "$(basename "$interp")" >/dev/null || die "the loader $interp is not in the base (libc6 missing from RUNTIME_PKGS?)"
missing=()
declare -A seen=()
queue=("$work/app/usr/bin/tephra")
while [ ${#queue[@]} -gt 0 ]; do
  f=${queue[0]}; queue=("${queue[@]:1}")
  for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -n "${seen[$so]:-}" ] && continue
    seen[$so]=1
    if p=$(find_lib "$so"); then queue+=("$p"); else missing+=("$so"); fi
  done
done
if [ ${#missing[@]} -gt 0 ]; then
  for so in "${missing[@]}"; do
    owner=$(dpkg -S "*/$so" 2>/dev/null | head -n1 | sed 's/:.*//') || true
    echo "  $so: not in the image${owner:+; on this host it comes from the Debian package '$owner'}" >&2
  done
  die "tephra needs libraries that no package in RUNTIME_PKGS provides: add the package(s) to RUNTIME_PKGS in image/build.sh"
fi
# On a Debian build host, the packages ldd+dpkg derive must all be listed (catches a library that another
# listed package happens to ship too).
if command -v dpkg >/dev/null && derived=$(derive_packages 2>/dev/null) && ! grep -q '^?' <<<"$derived"; then
  extra=$(comm -23 <(echo "$derived") <(printf '%s\n' "${RUNTIME_PKGS[@]}" | sed 's/:.*//' | sort))
  [ -z "$extra" ] || die "the binary links libraries of package(s) not in RUNTIME_PKGS: $(echo $extra) (add them in image/build.sh)"
fi

# --- layers -------------------------------------------------------------------------------------------------
# The application layer: only /usr/bin/tephra, deterministic (sorted, fixed owner and mtime, no atime/ctime).
# shellcheck disable=SC2054  # the commas belong to --pax-option
TAR_REPRO=(--sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime
           --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)
tar -C "$work/app" "${TAR_REPRO[@]}" -cf "$work/app.tar" ./usr/bin/tephra

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LAYOUT=$OUT/tephra-oci
ARCHIVE=$OUT/tephra-$VERSION.oci.tar
rm -rf "$LAYOUT" "$OUT"/tephra-*.oci.tar "$OUT/image.json"
umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$REF"
umoci raw add-layer --image "$LAYOUT:$REF" --history.created "$CREATED" --history.author tephra \
  --history.created_by "mmdebstrap --variant=extract $SUITE: ${RUNTIME_PKGS[*]} + ${DATA_PKGS[*]} (image/build.sh)" \
  "$BASE/rootfs.tar"
umoci raw add-layer --image "$LAYOUT:$REF" --history.created "$CREATED" --history.author tephra \
  --history.created_by "/usr/bin/tephra ($version_line, objcopy --strip-debug)" "$work/app.tar"
label() { printf -- '--config.label=org.opencontainers.image.%s=%s\n' "$1" "$2"; }
mapfile -t labels < <(
  label title tephra
  label description "Tephra: a Volcano-compatible batch system; one binary, roles controller, scheduler, webhook, nodesim"
  label version "$VERSION"
  label revision "$REVISION"
  label created "$CREATED"
  label base.name "debian:$SUITE (mmdebstrap --variant=extract)")
umoci config --image "$LAYOUT:$REF" --no-history \
  --created "$CREATED" --author tephra --os linux --architecture "$(dpkg --print-architecture)" \
  --clear=config.env --clear=config.entrypoint --clear=config.cmd --clear=config.labels \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.entrypoint /usr/bin/tephra --config.cmd --help \
  --config.user "$UID_GID" --config.workingdir / --config.stopsignal SIGTERM \
  "${labels[@]}"
umoci gc --layout "$LAYOUT"
# The oci-archive is a tar of the layout (what skopeo's oci-archive: transport reads and writes), made
# reproducibly.
find "$LAYOUT" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
tar -C "$LAYOUT" "${TAR_REPRO[@]}" --mode=u+rw,go+r,go-w -cf "$ARCHIVE" .

# --- image.json and summary ---------------------------------------------------------------------------------
blob() { echo "$LAYOUT/blobs/${1%%:*}/${1#*:}"; }
manifest_digest=$(jq -r --arg r "$REF" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $r) | .digest' "$LAYOUT/index.json")
manifest=$(blob "$manifest_digest")
config_digest=$(jq -r .config.digest "$manifest")
diff_ids=$(jq -c .rootfs.diff_ids "$(blob "$config_digest")")
uncompressed=$(( $(stat -c %s "$BASE/rootfs.tar") + $(stat -c %s "$work/app.tar") ))
layers=$(jq -c --argjson diffs "$diff_ids" --argjson u "[$(stat -c %s "$BASE/rootfs.tar"),$(stat -c %s "$work/app.tar")]" \
  '[.layers | to_entries[] | {digest: .value.digest, size: .value.size, diff_id: $diffs[.key], uncompressed_size: $u[.key]}]' "$manifest")
jq -n --arg ref "$REF" --arg version "$VERSION" --arg revision "$REVISION" --arg created "$CREATED" \
  --arg manifest "$manifest_digest" --arg config "$config_digest" --argjson layers "$layers" \
  --argjson uncompressed "$uncompressed" --argjson archive "$(stat -c %s "$ARCHIVE")" \
  --arg archive_sha256 "sha256:$(sha256sum "$ARCHIVE" | cut -d' ' -f1)" --arg base "$(basename "$BASE")" \
  --argjson packages "$(jq -R -s 'split("\n") | map(select(length > 0) | split("\t") | {(.[0]): .[1]}) | add' "$work/packages.tsv")" \
  '{reference: $ref, version: $version, revision: $revision, created: $created,
    manifest_digest: $manifest, config_digest: $config,
    compressed_size: ($layers | map(.size) | add), uncompressed_size: $uncompressed,
    archive: {file: "tephra-\($version).oci.tar", size: $archive, sha256: $archive_sha256},
    layers: $layers, base: $base, packages: $packages}' >"$OUT/image.json"

mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
cat <<EOF
image: $REF  (built in $(elapsed) s)
  manifest  $manifest_digest
  config    $config_digest
  size      $(mib "$(jq .compressed_size "$OUT/image.json")") compressed layers, $(mib "$uncompressed") uncompressed, archive $(mib "$(stat -c %s "$ARCHIVE")")
  layout    $LAYOUT
  archive   $ARCHIVE
  details   $OUT/image.json
EOF
