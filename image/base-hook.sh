#!/usr/bin/env bash
# mmdebstrap --extract-hook for the Tephra image's base layer (run by image/build.sh, not by hand).
#   $1  the root filesystem mmdebstrap has just extracted the runtime packages into (their .debs are still in
#       $1/var/cache/apt/archives)
#   $2  space-separated "data-only" packages: downloaded WITHOUT dependencies and only their data files kept
#       (ca-certificates: the CA bundle; base-files: /etc/os-release, /etc/debian_version; tzdata: zoneinfo)
# It writes dpkg's database (so scanners such as trivy/syft see every package and version), the generated
# CA bundle, the users, and removes everything a distroless image does not need: apt and dpkg configuration,
# /dev, iconv modules, changelogs. Any change here changes the base cache key (image/build.sh hashes this file).
set -euo pipefail
R=$1
DATA_PKGS=$2
ARCH=$(dpkg --print-architecture)
ADMIN=$R/var/lib/dpkg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- data-only packages: fetched with the same apt configuration (suite, mirror, keyring) as the rest.
# (as root: the download goes to this private temporary directory, which apt's _apt user cannot write)
(cd "$work" && APT_CONFIG=$MMDEBSTRAP_APT_CONFIG apt-get download -q=2 -oAPT::Sandbox::User=root $DATA_PKGS)

# --- dpkg database: status + info/<pkg>.list (+ md5sums), as `dpkg --unpack` would leave them.
: >"$ADMIN/status"
mkdir -p "$ADMIN/info"
for deb in "$R"/var/cache/apt/archives/*.deb "$work"/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  name=$pkg
  [ "$(dpkg-deb -f "$deb" Multi-Arch)" = same ] && name=$pkg:$ARCH
  dpkg-deb -f "$deb" | awk '{print} /^Package:/ {print "Status: install ok installed"}' >>"$ADMIN/status"
  echo >>"$ADMIN/status"
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's,^\./$,/.,' -e 's,^\./,/,' -e 's,\(.\)/$,\1,' >"$ADMIN/info/$name.list"
  mkdir -p "$work/ctl"
  dpkg-deb -e "$deb" "$work/ctl/$name"
  [ -f "$work/ctl/$name/md5sums" ] && cp "$work/ctl/$name/md5sums" "$ADMIN/info/$name.md5sums"
done

# --- ca-certificates: what update-ca-certificates would generate (every Mozilla certificate, in name order).
mkdir -p "$work/ca" "$R/etc/ssl/certs" "$R/usr/lib/ssl" "$R/usr/share/doc/ca-certificates"
dpkg-deb -x "$work"/ca-certificates_*.deb "$work/ca"
find "$work/ca/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort | while read -r crt; do
  sed -e '$a\' "$crt"
done >"$R/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$R/etc/ssl/certs/ca-certificates.crt"
cp "$work/ca/usr/share/doc/ca-certificates/copyright" "$R/usr/share/doc/ca-certificates/"
# OpenSSL's default verify paths (OPENSSLDIR=/usr/lib/ssl), as Debian's `openssl` package links them.
ln -s /etc/ssl/certs/ca-certificates.crt "$R/usr/lib/ssl/cert.pem"
ln -s /etc/ssl/certs "$R/usr/lib/ssl/certs"

# --- base-files: only the OS identification (scanners read it) and its copyright.
mkdir -p "$work/bf" "$R/usr/share/doc/base-files"
dpkg-deb -x "$work"/base-files_*.deb "$work/bf"
cp -a "$work/bf/etc/debian_version" "$R/etc/"
cp -a "$work/bf/usr/lib/os-release" "$R/usr/lib/"
ln -s ../usr/lib/os-release "$R/etc/os-release"
cp "$work/bf/usr/share/doc/base-files/copyright" "$R/usr/share/doc/base-files/"

# --- tzdata: the zoneinfo database only (its maintainer scripts configure /etc/localtime, which stays unset:
# containers run in UTC). CronJob timeZone names resolve here (tz/, cctz).
mkdir -p "$work/tz" "$R/usr/share/doc/tzdata"
dpkg-deb -x "$work"/tzdata_*.deb "$work/tz"
cp -a "$work/tz/usr/share/zoneinfo" "$R/usr/share/"
cp "$work/tz/usr/share/doc/tzdata/copyright" "$R/usr/share/doc/tzdata/"

# --- users: root (uid 0 exists in every image; nothing runs as it), tephra 65532 (the image's user), nobody.
cat >"$R/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
tephra:x:65532:65532:tephra:/home/tephra:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$R/etc/group" <<'EOF'
root:x:0:
tephra:x:65532:
nogroup:x:65534:
EOF
chmod 0644 "$R/etc/passwd" "$R/etc/group"
# glibc's lookups: files only for users, files then DNS for hosts (Kubernetes mounts /etc/hosts, resolv.conf).
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n' \
  >"$R/etc/nsswitch.conf"
install -d -m 0700 "$R/root"
install -d -m 0755 "$R/home"
install -d -m 0700 -o 65532 -g 65532 "$R/home/tephra"
chmod 1777 "$R/tmp"

# --- prune: no package manager, nothing the binary cannot use. (/dev is mmdebstrap's: it may be mounted
# now, and --skip=output/dev keeps its nodes out of the tarball.)
rm -rf "$R/etc/apt" "$R/etc/dpkg" "$R/var/lib/apt" "$R/var/cache" "$R/var/log" \
  "$R/etc/resolv.conf" "$R/etc/hostname" "$R/etc/fstab" \
  "$ADMIN/alternatives" "$ADMIN/triggers" \
  "$R/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/gconv" \
  "$R/usr/share/lintian" "$R/usr/share/gdb" "$R/usr/share/gcc" "$R/usr/share/locale"
install -d -m 0755 "$R/proc" "$R/sys" "$R/run" "$R/var/cache" "$R/var/log"   # mount points
# Keep each package's copyright (licences), drop changelogs and other docs.
find "$R/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete
# .list files name only what is really in the image.
for l in "$ADMIN"/info/*.list; do
  while IFS= read -r p; do
    [ "$p" = /. ] || [ -e "$R$p" ] || [ -L "$R$p" ] && printf '%s\n' "$p"
  done <"$l" >"$l.new"
  mv "$l.new" "$l"
done
