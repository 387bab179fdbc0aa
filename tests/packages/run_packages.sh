#!/usr/bin/env bash
# The Debian packages as an admin meets them (docs/admin.md, "Install the
# packages"):
#  1. scripts/package.sh packs this build (lintian: no error) and the
#     packages hold their files where Debian's tools look;
#  2. `apt-get install ./*.deb` into a clean Debian 12 root (mmdebstrap,
#     cached by scripts/lib_debroot.sh; each run works on a throwaway
#     overlay of it) pulls every dependency from the archive;
#  3. in that root, in a network namespace of its own: Open MPI sees the
#     component with no mca_base_component_path; the component, the agent
#     (--version, metrics) and the CLI say the package's version; the agent runs as the
#     unit's User= with the unit's ExecStartPre and ExecStart command lines;
#     an ordinary user creates a lease with the installed switchagg-ctl and
#     runs a plain `mpirun` of switchagg-bench --check through the switch
#     path (every size served by "switch", every result exact); the
#     example consumer (examples/agent_client) builds against switchagg-dev
#     with find_package(switchagg) and talks to that agent;
#  3b. `module load switchagg` works in a login shell with
#     environment-modules, then with Lmod (the packages' modulefile sets
#     SWITCHAGG_PREFIX=/usr and no component path);
#  4. `apt-get remove` leaves nothing but the conffiles; `dpkg --purge`
#     leaves nothing.
#
#   run_packages.sh SRC BUILD
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
[[ $(id -u) -eq 0 ]] || fail "needs root (chroot, mounts, network namespace)"
work=$(mktemp -d "$build/packages-test.XXXXXX")
root=$work/root
cleanup() {
  umount -l "$root" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== 1. scripts/package.sh --no-build"
SWITCHAGG_BUILD_DIR=$build "$src/scripts/package.sh" --no-build --out "$work/debs" ||
  fail "scripts/package.sh failed"
shopt -s nullglob
debs=("$work"/debs/*.deb)
names=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done | sort | tr '\n' ' ')
want="switchagg-agent switchagg-dev switchagg-openmpi switchagg-pmpi switchagg-slurm "
[[ $names == "$want" ]] || fail "packages: '$names' (want '$want')"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ompi_dir=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
has() { dpkg-deb -c "$work/debs/$1"_*.deb | awk '{print $6}' | grep -x "./${2#/}" >/dev/null || fail "$1 lacks $2"; }
has switchagg-openmpi "$ompi_dir/mca_coll_switchagg.so"
has switchagg-agent /usr/bin/switchagg-agent
has switchagg-agent /usr/bin/switchagg-ctl
has switchagg-agent /lib/systemd/system/switchagg-agent.service
has switchagg-agent /etc/switchagg/agent.toml
has switchagg-slurm /usr/lib/$multiarch/slurm-wlm/switchagg_spank.so
has switchagg-slurm /etc/slurm/plugstack.conf.d/switchagg.conf.example
has switchagg-pmpi /usr/lib/$multiarch/switchagg/libswitchagg_pmpi.so
has switchagg-dev /usr/lib/$multiarch/cmake/switchagg/switchaggConfig.cmake
has switchagg-dev /usr/include/switchagg/agent/control_client.h
dpkg-deb -I "$work"/debs/switchagg-agent_*.deb conffiles | grep -x /etc/switchagg/agent.toml >/dev/null ||
  fail "/etc/switchagg/agent.toml is not a conffile"
echo "packages: $names(files in place, conffiles marked)"

echo "== 2. a clean Debian 12 root, apt-get install ./*.deb"
# shellcheck source=../../scripts/lib_debroot.sh
. "$src/scripts/lib_debroot.sh"
debroot_init debian12 bookworm
debroot_make
mkdir -p "$root" "$work/upper" "$work/ovlwork" "$debroot_cache/debian12-apt-archives/partial"
mount -t overlay overlay -o "lowerdir=$debroot_root,upperdir=$work/upper,workdir=$work/ovlwork" "$root" ||
  fail "could not mount an overlay of $debroot_root"
# Downloads are kept across runs; the root itself is thrown away.
inroot() { debroot_run "$root" "$work" "$1"; }
# apt_install LOG ARGS: apt-get install in the root, downloads cached.
apt_install() {
  local log=$1 rc=0
  shift
  mount --bind "$debroot_cache/debian12-apt-archives" "$root/var/cache/apt/archives" ||
    fail "could not bind the apt archive cache"
  inroot "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $* >$log 2>&1" || rc=$?
  umount -l "$root/var/cache/apt/archives"
  return "$rc"
}
t0=$(date +%s)
inroot "apt-get update -qq" || fail "apt-get update failed in the root"
apt_install apt-install.log "$(printf './debs/%s ' "${debs[@]##*/}")" ||
  fail "apt-get install ./*.deb failed: $(tail -20 "$work/apt-install.log")"
echo "apt-get install: $(grep -c '^Setting up' "$work/apt-install.log") packages set up in $(($(date +%s) - t0)) s"

# What a site tool's build needs besides switchagg-dev's dependencies.
apt_install build-tools.log cmake g++ make || fail "apt-get install cmake g++ make: $(tail -5 "$work/build-tools.log")"
cp -r "$src/examples/agent_client" "$work/agent_client"

echo "== 3. the installed packages at work"
cat >"$work/inroot.sh" <<'EOF'
set -euo pipefail
fail() { echo "FAIL (in the root): $*" >&2; exit 1; }
# Open MPI finds the component by itself; every part says the package's version.
ompi_info --parsable | grep '^mca:coll:switchagg:' >/dev/null || fail "ompi_info does not list coll switchagg"
v=$(dpkg-query -W -f='${Version}' switchagg-openmpi)
ompi_info | grep "MCA coll: switchagg (.*Component v$v)" >/dev/null || fail "ompi_info does not say v$v"
[[ $(switchagg-agent --version) == "switchagg-agent $v" && $(switchagg-ctl --version) == "switchagg-ctl $v" ]] ||
  fail "--version: $(switchagg-agent --version), $(switchagg-ctl --version) (package $v)"
# The agent as systemd would start it: the unit's user, directories and commands.
unit=/lib/systemd/system/switchagg-agent.service
key() { sed -n "s/^$1=//p" "$unit" | sed -n 1p; }
user=$(key User)
[[ -n $user ]] && id "$user" >/dev/null || fail "the unit's User=$user does not exist"
install -d -o "$user" -g "$user" -m "$(key RuntimeDirectoryMode)" "/run/$(key RuntimeDirectory)"
install -d -o "$user" -g "$user" -m "$(key StateDirectoryMode)" "/var/lib/$(key StateDirectory)"
read -ra pre <<<"$(key ExecStartPre)"
read -ra start <<<"$(key ExecStart)"
setpriv --reuid="$user" --regid="$user" --init-groups -- "${pre[@]}" || fail "ExecStartPre (${pre[*]}) refused the shipped config"
# setpriv execs the agent itself (runuser would stand between it and SIGTERM).
setpriv --reuid="$user" --regid="$user" --init-groups -- "${start[@]}" >/tmp/agent.log 2>&1 &
agent=$!
for _ in $(seq 100); do [[ -S /run/switchagg/agent.sock ]] && break; sleep 0.1; done
[[ -S /run/switchagg/agent.sock ]] || fail "the agent made no control socket: $(cat /tmp/agent.log)"
switchagg-ctl metrics | grep -x "switchagg_build_info{version=\"$v\"} 1" >/dev/null || fail "the agent's metrics lack version $v"
# An ordinary user: a lease, then a plain mpirun through the switch path.
useradd -m -s /bin/bash alice
runuser -l alice -c '
  set -euo pipefail
  eval "$(switchagg-ctl lease create --job pkgtest --slots 4 | grep ^export)"
  mpirun --oversubscribe -np 2 --mca coll_switchagg_allreduce_algorithm switch \
    switchagg-bench --check --min 8 --max 1M --iters 20
  switchagg-ctl lease delete --job pkgtest' >/tmp/job.log 2>&1 || fail "the job failed: $(cat /tmp/job.log)"
cat /tmp/job.log
rows=$(grep -E '^ +[0-9]+ ' /tmp/job.log || true)
[[ -n $rows ]] || fail "switchagg-bench printed no result rows"
if echo "$rows" | grep -vw switch >/dev/null; then fail "a size was not served by the switch path"; fi
# switchagg-dev: find_package(switchagg) from /usr builds the example, which
# talks to the agent through both client libraries.
cp -r agent_client /tmp/agent_client && chmod -R a+rX /tmp/agent_client
runuser -u alice -- cmake -S /tmp/agent_client -B /tmp/example >/tmp/example.log 2>&1 &&
  runuser -u alice -- cmake --build /tmp/example >>/tmp/example.log 2>&1 ||
  fail "the example does not build against switchagg-dev: $(tail -20 /tmp/example.log)"
out=$(runuser -u alice -- /tmp/example/agent_client unix:/run/switchagg/agent.sock 2>&1) ||
  fail "the example failed: $out"
echo "$out"
[[ $out == *"allreduce through the agent: 1.5 -2 3.25"* ]] || fail "the example summed nothing"
kill -TERM "$agent"
wait "$agent" || fail "the agent did not stop cleanly on SIGTERM: $(tail -5 /tmp/agent.log)"
echo "agent, lease and switch-path job OK"
EOF
# A network namespace of its own: the shipped config's ports cannot meet
# another agent's on this host.
unshare --net -- bash -c 'set -euo pipefail; ip link set lo up; . "$1"; debroot_run "$2" "$3" "bash inroot.sh"' \
  _ "$src/scripts/lib_debroot.sh" "$root" "$work" ||
  fail "the installed packages did not work"

echo "== 3b. module load switchagg: environment-modules, then Lmod (they conflict)"
for modules in environment-modules lmod; do
  apt_install "$modules.log" "$modules" || fail "apt-get install $modules: $(tail -5 "$work/$modules.log")"
  # A login shell of an ordinary user, as a job script gets it.
  out=$(inroot "runuser -l alice -c 'module load switchagg && echo \"prefix=\$SWITCHAGG_PREFIX path=\${OMPI_MCA_mca_base_component_path:-unset}\"'" 2>&1) ||
    fail "$modules: module load switchagg: $out"
  [[ $out == *"prefix=/usr path=unset"* ]] || fail "$modules: module load switchagg set: $out"
  echo "$modules: module load switchagg: $out"
  # Lmod replaces environment-modules; its profile script must go too.
  inroot "dpkg --purge $modules >/dev/null" || fail "dpkg --purge $modules"
done
echo "== 4. remove: only conffiles remain; purge: nothing"
# Every file the packages ship, without conffiles.
for d in "${debs[@]}"; do dpkg-deb -c "$d"; done | awk '$1 !~ /^d/ {sub(/^\./, "", $6); print $6}' | sort >"$work/files"
for d in "${debs[@]}"; do dpkg-deb -I "$d" conffiles 2>/dev/null || true; done | sort >"$work/conffiles"
[[ -s $work/conffiles ]] || fail "no package has conffiles"
inroot "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq $names >remove.log 2>&1" ||
  fail "apt-get remove failed: $(tail -5 "$work/remove.log")"
while read -r f; do
  if grep -qx "$f" "$work/conffiles"; then
    [[ -e $root$f ]] || fail "conffile $f went with apt-get remove"
  else
    [[ ! -e $root$f && ! -L $root$f ]] || fail "$f is left after apt-get remove"
  fi
done <"$work/files"
inroot "dpkg --purge $names >purge.log 2>&1" ||
  fail "dpkg --purge failed: $(tail -5 "$work/purge.log")"
while read -r f; do [[ ! -e $root$f ]] || fail "$f is left after dpkg --purge"; done <"$work/conffiles"
left=$(inroot "dpkg-query -W -f='\${Package} \${db:Status-Abbrev}\n' 'switchagg-*' 2>/dev/null | grep -v ' un' || true")
[[ -z $left ]] || fail "dpkg still knows: $left"
echo "remove kept $(wc -l <"$work/conffiles") conffile(s) and nothing else; purge left nothing"
echo "PASS packages"
