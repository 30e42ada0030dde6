#!/bin/bash
# Builds the jobctl and agentd packages and checks them the way an admin's tools would:
#   tests/package/check_packages.sh BUILD_DIR
# BUILD_DIR is a RelWithDebInfo tree of its own (CTest passes one under its build directory:
# the dev tree has sanitizers, packages must not). Checks, in order:
#   1. packaging/build-packages builds both .debs and both .rpms with the project version;
#   2. the contents, modes and owners match tests/package/expected/, every /etc file is a
#      conffile (%config(noreplace) in the .rpm), Depends came from shlibdeps;
#   3. lintian: no errors; rpmlint: no errors but the signature and packager ones;
#   4. the packaged binaries run (--version) and the units pass systemd-analyze verify
#      against them; the coordinator's unit scores at most 2.0 on systemd-analyze security.
# Prints every problem and exits 1 if there was one. Install and purge on a real system are
# packaging/test-in-chroot's job (slower, needs the network for debootstrap).
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: check_packages.sh BUILD_DIR}
mkdir -p "$build" && build=$(cd "$build" && pwd)
expected_dir="$src/tests/package/expected"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
step() { echo "== $*"; }

for tool in lintian rpmlint rpm dpkg-deb systemd-analyze; do
  command -v "$tool" >/dev/null ||
    { echo "check_packages: $tool is missing; run packaging/install-deps" >&2; exit 1; }
done

step "build-packages $build"
if ! "$src/packaging/build-packages" "$build" >"$build.log" 2>&1; then
  tail -n 40 "$build.log" >&2
  echo "check_packages: packaging/build-packages failed (log: $build.log)" >&2
  exit 1
fi
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
release=$(sed -n 's/^JOBCTL_PACKAGE_RELEASE:STRING=//p' "$build/CMakeCache.txt")
arch=$(dpkg --print-architecture)
rpm_arch=$(uname -m)
packages=(jobctl agentd)
declare -A deb rpmfile
for p in "${packages[@]}"; do
  deb[$p]="$build/${p}_${version}-${release}_${arch}.deb"
  rpmfile[$p]="$build/${p}-${version}-${release}.${rpm_arch}.rpm"
  [ -f "${deb[$p]}" ] || fail "no ${deb[$p]##*/}"
  [ -f "${rpmfile[$p]}" ] || fail "no ${rpmfile[$p]##*/}"
done
[ "$failures" -eq 0 ] || exit 1
newest=$(sed -n '1s/^jobctl (\([^)]*\)).*/\1/p' "$src/packaging/changelog")
[ "$newest" = "$version-$release" ] ||
  fail "packaging/changelog: the newest entry is $newest, the packages are $version-$release"

# Completions exist only once jobctl has a `completion` command.
if "$build/cmd/jobctl/jobctl" completion bash >/dev/null 2>&1; then
  completions=yes
else
  completions=no
  echo "note: jobctl has no 'completion' command yet; completions are not checked"
fi

# Compares "MODE OWNER PATH" lines (stdin) with an expected list: the listed ones must all be
# there, and nothing else but extra man pages.
compare_contents() {
  local what=$1 expected=$2 actual
  actual=$(sort -k3)
  local want
  want=$(grep -v '^#' "$expected" | sort -k3)
  if [ "$completions" = no ]; then
    want=$(grep -Ev 'completion|/zsh/' <<<"$want")
  fi
  local missing extra
  missing=$(comm -23 <(echo "$want" | sort) <(echo "$actual" | sort))
  extra=$(comm -13 <(echo "$want" | sort) <(echo "$actual" | sort) |
          grep -Ev '^-rw-r--r-- root/root /usr/share/man/man[1-9]/[^/]+\.[1-9]\.gz$')
  [ -z "$missing" ] || fail "$what lacks (or has with another mode/owner):"$'\n'"$missing"
  [ -z "$extra" ] || fail "$what has unexpected files:"$'\n'"$extra"
}

for p in "${packages[@]}"; do
  step "contents of ${deb[$p]##*/}"
  # dpkg-deb -c: MODE OWNER/GROUP SIZE DATE TIME ./PATH; directories end in /.
  compare_contents "${deb[$p]##*/}" "$expected_dir/$p.deb" < <(
    dpkg-deb -c "${deb[$p]}" | awk '$6 !~ /\/$/ { sub(/^\./, "", $6); print $1, $2, $6 }')
  conffiles=$(dpkg-deb --ctrl-tarfile "${deb[$p]}" | tar -xOf - ./conffiles 2>/dev/null | sort)
  etc_files=$(dpkg-deb -c "${deb[$p]}" | awk '$6 ~ /^\.\/etc\/.*[^\/]$/ { sub(/^\./, "", $6); print $6 }' | sort)
  [ -n "$etc_files" ] && [ "$conffiles" = "$etc_files" ] ||
    fail "${deb[$p]##*/}: conffiles [$conffiles] are not the /etc files [$etc_files]"
  [ "$(dpkg-deb -f "${deb[$p]}" Version)" = "$version-$release" ] ||
    fail "${deb[$p]##*/}: Version is not $version-$release"
  depends=$(dpkg-deb -f "${deb[$p]}" Depends)
  echo "Depends: $depends"
  case "$depends" in
    *"libc6 (>="*) ;;
    *) fail "${deb[$p]##*/}: Depends has no libc6 version from dpkg-shlibdeps: $depends" ;;
  esac

  step "contents of ${rpmfile[$p]##*/}"
  compare_contents "${rpmfile[$p]##*/}" "$expected_dir/$p.rpm" < <(
    rpm -qp --nosignature --qf '[%{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILENAMES}\n]' \
        "${rpmfile[$p]}" 2>/dev/null | awk '$1 !~ /^d/ || $3 ~ /^\/var\/lib\// { print }')
  config=$(rpm -qp --nosignature --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "${rpmfile[$p]}" 2>/dev/null |
           awk 'NF == 2 && $1 ~ /c/ { print $1, $2 }' | sort)
  etc_rpm=$(rpm -qlp --nosignature "${rpmfile[$p]}" 2>/dev/null | grep '^/etc/.*\.toml$' |
            sed 's/^/cn /' | sort)
  [ -n "$etc_rpm" ] && [ "$config" = "$etc_rpm" ] ||
    fail "${rpmfile[$p]##*/}: %config files [$config] are not the /etc files as noreplace [$etc_rpm]"
  echo "Requires (besides libraries): $(rpm -qp --nosignature --requires "${rpmfile[$p]}" 2>/dev/null |
    grep -Ev '^(lib|rpmlib|rtld)' | sort -u | tr '\n' ' ')"
done

step "lintian"
# initial-upload-closes-no-bugs asks for an ITP bug number, which only packages uploaded to
# the Debian archive have.
lintian_out=$(lintian --pedantic --display-info --display-experimental --tag-display-limit 0 \
                --suppress-tags initial-upload-closes-no-bugs "${deb[@]}" 2>&1 |
              grep -v '^running with root privileges')
echo "$lintian_out"
grep -q '^E:' <<<"$lintian_out" && fail "lintian reports errors"

step "rpmlint"
# packaging/rpm/rpmlint.toml filters the deliberate choices, each with its reason. Off-archive
# packages are unsigned and built without a Packager: the only errors allowed.
rpmlint_out=$(rpmlint -c "$src/packaging/rpm/rpmlint.toml" "${rpmfile[@]}" 2>&1)
echo "$rpmlint_out"
rpm_errors=$(grep -E '^[^ ]+: E: ' <<<"$rpmlint_out" | grep -Ev ': E: (no-signature|no-packager-tag)( |$)')
[ -z "$rpm_errors" ] || fail "rpmlint reports errors"

step "binaries and units"
root="$build/package-root"
rm -rf "$root" && mkdir -p "$root"
for p in "${packages[@]}"; do dpkg-deb -x "${deb[$p]}" "$root"; done
for bin in usr/bin/jobctl usr/sbin/agentd; do
  out=$("$root/$bin" --version 2>&1) && [[ "$out" == *"$version"* ]] ||
    fail "$bin --version: $out"
done
for unit in "$root"/usr/lib/systemd/system/*.service; do
  name=${unit##*/}
  # Point ExecStart at the extracted binaries; everything else is the packaged unit.
  sed -e "s|/usr/bin/jobctl|$root/usr/bin/jobctl|" -e "s|/usr/sbin/agentd|$root/usr/sbin/agentd|" \
    "$unit" >"$build/$name"
  verify=$(systemd-analyze verify --man=no "$build/$name" 2>&1) || fail "systemd-analyze verify $name: $verify"
  [ -z "$verify" ] || fail "systemd-analyze verify $name: $verify"
  # Every Documentation= man page is in the packages.
  for page in $(sed -n 's/^Documentation=//p' "$unit"); do
    ref=${page#man:}
    file="${ref%(*}.${ref##*(}"
    file=${file%)}
    section=${file##*.}
    [ -f "$root/usr/share/man/man$section/$file.gz" ] || fail "$name: Documentation=$page is not packaged"
  done
  score=$(systemd-analyze security --offline=true "$build/$name" 2>&1 |
          sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
  echo "$name: systemd-analyze security $score"
done
systemd-analyze security --offline=true --threshold=20 "$build/jobctl-coordinator.service" >/dev/null ||
  fail "jobctl-coordinator.service scores above 2.0 on systemd-analyze security"

if [ "$failures" -ne 0 ]; then
  echo "check_packages: $failures problem(s)" >&2
  exit 1
fi
echo "check_packages: ok (${deb[*]##*/} ${rpmfile[*]##*/})"
