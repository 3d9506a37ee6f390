#!/bin/sh
# Install what building, testing and the main job need, on Debian 12
# (the allocator peers and matplotlib are for `make bench`).
# One package per apt-get call: this machine's apt hook deletes downloaded
# packages after each dpkg run. Packages already present are skipped.
set -e
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
need=""
for pkg in cmake make gcc g++ binutils python3.11 libpython3.11-testsuite sqlite3 git \
           redis-server redis-tools perl procps time pkg-config clang valgrind \
           libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 python3-matplotlib; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need="$need $pkg"
done
[ -z "$need" ] && exit 0
$SUDO apt-get update -qq
for pkg in $need; do
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null ||
		$SUDO apt-get -f install -y -qq >/dev/null
done
