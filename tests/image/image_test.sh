#!/usr/bin/env bash
# image_test: builds the container image with image/build.sh into a temporary directory and checks it from the
# outside, without a container runtime (docs/image.md):
#   1. unpack with umoci; the image config: entrypoint, user 65532 (never root), the passwd entry
#   2. `tephra version` and `tephra webhook --help` run INSIDE the unpacked root filesystem as uid/gid 65532
#      (root: chroot --userspec; not root: bubblewrap in a user namespace)
#   3. no setuid/setgid file, no shell or package manager, every shared library resolves inside the rootfs
#      (the image's own loader, ld.so --list, run in the rootfs), the binary carries no debug info
#   4. the oci-archive stays below TEPHRA_IMAGE_MAX_BYTES (16 MiB; measured 10.1 MiB, docs/image.md)
#   5. a second (warm) build gives the same manifest digest
# Env: TEPHRA_BIN (the binary, set by ctest), TEPHRA_SOURCE_DIR, TEPHRA_CACHE (base layer cache).
# Exit 77 (ctest: skipped) when not root and user namespaces are unavailable.
set -euo pipefail
SRC=${TEPHRA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${TEPHRA_BIN:-$SRC/build/bin/tephra}
MAX_BYTES=${TEPHRA_IMAGE_MAX_BYTES:-$((16 * 1024 * 1024))}
UID_GID=65532:65532

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tephra-image-test.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

ROOTLESS=0
if [ "$(id -u)" -ne 0 ]; then
  ROOTLESS=1
  if ! command -v bwrap >/dev/null || ! unshare --user --map-root-user true 2>/dev/null; then
    echo "image_test: SKIPPED: not root, and bubblewrap/user namespaces are unavailable (mmdebstrap and the rootfs runs need one of them)"
    exit 77
  fi
fi

passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1" >&2; failed=$((failed + 1)); }
# check "description" command...: the command's status decides.
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }

# Runs a command inside the rootfs as the image's user (or as root-in-the-rootfs with AS=0).
in_rootfs() {
  local uid=${AS:-${UID_GID%%:*}} gid=${AS:-${UID_GID##*:}}
  if [ "$ROOTLESS" = 0 ]; then
    chroot --userspec="$uid:$gid" --groups="$gid" "$ROOTFS" "$@"
  else
    bwrap --unshare-all --uid "$uid" --gid "$gid" --bind "$ROOTFS" / --dev /dev --proc /proc --chdir / "$@"
  fi
}

echo "== build (image/build.sh --binary $BIN)"
t0=$SECONDS
bash "$SRC/image/build.sh" --binary "$BIN" --out "$tmp/out"
echo "build: $((SECONDS - t0)) s"
OUT=$tmp/out
REF=$(jq -r .reference "$OUT/image.json")
VERSION=$(jq -r .version "$OUT/image.json")
ARCHIVE=$OUT/tephra-$VERSION.oci.tar
blob() { echo "$OUT/tephra-oci/blobs/${1%%:*}/${1#*:}"; }

echo "== 1. unpack and config"
host_version=$("$BIN" version)
check "reference is docker.io/tephra/tephra:<version of the binary> ($REF)" \
  test "$REF" = "docker.io/tephra/tephra:$(sed -n 's/^tephra \([^ ]*\).*/\1/p' <<<"$host_version")"
check "layout index names $REF with the recorded manifest digest" \
  test "$(jq -r --arg r "$REF" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $r) | .digest' \
          "$OUT/tephra-oci/index.json")" = "$(jq -r .manifest_digest "$OUT/image.json")"
sk=$(TMPDIR=$tmp skopeo inspect --format '{{.Digest}}' "oci-archive:$ARCHIVE" 2>&1) || true
check "skopeo reads the oci-archive: same manifest digest ($sk)" test "$sk" = "$(jq -r .manifest_digest "$OUT/image.json")"
umoci_flags=()
[ "$ROOTLESS" = 1 ] && umoci_flags=(--rootless)
umoci unpack "${umoci_flags[@]}" --image "$OUT/tephra-oci:$REF" "$tmp/bundle" >/dev/null
ROOTFS=$tmp/bundle/rootfs
CONFIG=$(blob "$(jq -r .config_digest "$OUT/image.json")")
check "Entrypoint is [\"/usr/bin/tephra\"]" test "$(jq -c .config.Entrypoint "$CONFIG")" = '["/usr/bin/tephra"]'
check "User is $UID_GID" test "$(jq -r .config.User "$CONFIG")" = "$UID_GID"
check "WorkingDir is /" test "$(jq -r .config.WorkingDir "$CONFIG")" = /
check "labels: title, version, revision" test "$(jq -r '.config.Labels | [."org.opencontainers.image.title",
  ."org.opencontainers.image.version", ."org.opencontainers.image.revision"] | join(" ")' "$CONFIG")" = \
  "tephra $VERSION $(sed -n 's/.*(commit \([^)]*\)).*/\1/p' <<<"$host_version")"
not_root() { local u; u=$(jq -r .config.User "$CONFIG"); case ${u%%:*} in ''|0|root) return 1 ;; esac; }
check "the image does not run as root" not_root
check "runtime config (umoci): process runs as uid 65532 gid 65532, args /usr/bin/tephra --help" \
  test "$(jq -c '[.process.user.uid, .process.user.gid, .process.args]' "$tmp/bundle/config.json")" = \
  '[65532,65532,["/usr/bin/tephra","--help"]]'
check "/etc/passwd: tephra is uid 65532 gid 65532" grep -qx 'tephra:x:65532:65532:[^:]*:[^:]*:[^:]*' "$ROOTFS/etc/passwd"
check "/etc/group: tephra is gid 65532" grep -qx 'tephra:x:65532:' "$ROOTFS/etc/group"
check "/tmp is 1777" test "$(stat -c %a "$ROOTFS/tmp")" = 1777

echo "== 2. the binary runs inside the image's rootfs as $UID_GID"
got=$(in_rootfs /usr/bin/tephra version 2>&1) || true
check "tephra version inside = host ($host_version; got: $got)" test "$got" = "$host_version"
help=$(in_rootfs /usr/bin/tephra webhook --help 2>&1) || true
check "tephra webhook --help mentions --tls-cert-file" grep -q -- --tls-cert-file <<<"$help"
idline=$(in_rootfs /usr/bin/tephra --help 2>&1 | head -n1) || true
check "tephra --help (the image's Cmd) prints its usage" grep -q 'Volcano-compatible' <<<"$idline"

echo "== 3. contents"
suid=$(find "$ROOTFS" -xdev -type f -perm /6000)
check "no setuid/setgid files${suid:+ (found: $suid)}" test -z "$suid"
shells=$(find "$ROOTFS" -xdev ! -type d \( -name sh -o -name bash -o -name dash -o -name ash -o -name zsh -o -name busybox \
  -o -name apt -o -name apt-get -o -name dpkg -o -name perl -o -name python3 \) -print)
check "no shell, interpreter or package manager${shells:+ (found: $shells)}" test -z "$shells"
bins=$(cd "$ROOTFS" && find usr/bin usr/sbin usr/local -mindepth 1 2>/dev/null | sort | tr '\n' ' ') || true
check "usr/bin holds only tephra (got: $bins)" test "$bins" = "usr/bin/tephra "
exe=$(cd "$ROOTFS" && find . -xdev -type f -perm /111 ! -path ./usr/bin/tephra ! -name '*.so' ! -name '*.so.*' | tr '\n' ' ')
check "no other executable files${exe:+ (found: $exe)}" test -z "$exe"
check "/usr/bin/tephra has no debug info (stripped)" bash -c "! readelf -S '$ROOTFS/usr/bin/tephra' | grep -q '\.debug_info'"
ldlist=$(AS=0 in_rootfs /lib64/ld-linux-x86-64.so.2 --list /usr/bin/tephra 2>&1) && ldrc=0 || ldrc=$?
echo "$ldlist" | sed 's/^/   /'
check "the image's loader resolves every library inside the rootfs (exit $ldrc)" \
  bash -c '[ "$1" = 0 ] && ! grep -q "not found" <<<"$2"' _ "$ldrc" "$ldlist"
needed=$(readelf -d "$ROOTFS/usr/bin/tephra" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
unresolved=$(for so in $needed; do grep -q "^[[:space:]]*$so => /" <<<"$ldlist" || echo "$so"; done)
check "each NEEDED soname of tephra is resolved to a path in the rootfs${unresolved:+ (missing: $unresolved)}" test -z "$unresolved"
pkgs=$(dpkg-query --admindir="$ROOTFS/var/lib/dpkg" -W -f '${Package} ' 2>/dev/null) || pkgs=
check "dpkg database lists the packages (libc6, libssl3, libcpprest2.10, ca-certificates): $pkgs" \
  bash -c 'for p in libc6 libssl3 libcpprest2.10 ca-certificates; do grep -qw -- "$p" <<<"$1" || exit 1; done' _ "$pkgs"
check "CA bundle present" test -s "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
check "zoneinfo present (CronJob timeZone)" test -s "$ROOTFS/usr/share/zoneinfo/America/New_York"

echo "== 4. size"
size=$(stat -c %s "$ARCHIVE")
check "oci-archive $size bytes < $MAX_BYTES" test "$size" -lt "$MAX_BYTES"
check "image.json records the archive's size" test "$(jq .archive.size "$OUT/image.json")" = "$size"

echo "== 5. reproducible (second, warm build)"
t0=$SECONDS
bash "$SRC/image/build.sh" --binary "$BIN" --out "$tmp/out2" >/dev/null
echo "warm build: $((SECONDS - t0)) s"
check "same manifest digest" test "$(jq -r .manifest_digest "$tmp/out2/image.json")" = "$(jq -r .manifest_digest "$OUT/image.json")"

rm -rf "$tmp/bundle" "$tmp/out" "$tmp/out2"
check "no mounts left under $tmp" bash -c "! grep -q -- '$tmp' /proc/mounts"

echo "image_test: $passed passed, $failed failed"
[ "$failed" = 0 ]
