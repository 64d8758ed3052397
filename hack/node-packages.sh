#!/usr/bin/env bash
# Installs the Debian packages that the local control plane's real node runs and that its tools
# are built with; hack/tools.sh runs it first. It installs only what is missing, prints what it
# installs, and prints nothing when everything is there.
#
# As root it installs with apt-get (running `apt-get update` first when the package lists are
# missing, or again when an install fails for want of them). Otherwise it fails and prints the
# command to run. On a machine without dpkg and apt-get it only warns: the node needs Linux
# with these packages (or their equivalents).
#
# On a machine with systemd, installing containerd also starts the system's containerd service;
# the node's harness runs its own containerd with its own root, state and socket beside it.
set -euo pipefail

# package -> what the node uses it for
declare -A packages=(
  [containerd]="the container runtime the kubelet drives"
  [runc]="containerd's OCI runtime"
  [containernetworking-plugins]="CNI plugins in /usr/lib/cni (the node's pod network: bridge, host-local)"
  [iptables]="the pod network's forwarding and filter rules"
  [nftables]="removing the nftables table of the node's NetworkPolicy enforcer when the node stops"
  [busybox-static]="/bin/busybox, the static shell and tools of the test stacks' images"
  [gcc]="compiles the pod sandbox's pause binary (hack/tools.sh)"
  [libc6-dev]="the static C library the pause binary is linked with"
)

say() { printf '[node-packages] %s\n' "$*" >&2; }

mapfile -t wanted < <(printf '%s\n' "${!packages[@]}" | LC_ALL=C sort)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  say "not a Debian system: the real node needs what these Debian packages provide:"
  for pkg in "${wanted[@]}"; do say "  $pkg: ${packages[$pkg]}"; done
  exit 0
fi

# One dpkg-query for all: it names the installed ones ("ii") and fails on unknown ones.
declare -A installed=()
while read -r pkg status; do
  [[ $status != ii ]] || installed[$pkg]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${wanted[@]}" 2>/dev/null || true)
missing=()
for pkg in "${wanted[@]}"; do
  [[ -n ${installed[$pkg]:-} ]] || missing+=("$pkg")
done
((${#missing[@]} > 0)) || exit 0

if (($(id -u) != 0)); then
  say "the real node needs these Debian packages, which are not installed:"
  for pkg in "${missing[@]}"; do say "  $pkg: ${packages[$pkg]}"; done
  say "install them as root, then run this again:"
  say "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() {
  apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"
}

say "installing ${missing[*]}"
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  say "no package lists yet: apt-get update"
  apt-get update -q
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! apt_install >"$log" 2>&1; then
  # Old lists name package versions the mirror no longer has, or lack the package.
  if grep -qE 'Unable to locate package|has no installation candidate|Failed to fetch|404 +Not Found' "$log"; then
    say "the package lists are missing or out of date: apt-get update, then installing again"
    apt-get update -q
    apt_install >"$log" 2>&1 || { cat "$log" >&2; say "apt-get install failed"; exit 1; }
  else
    cat "$log" >&2
    say "apt-get install failed"
    exit 1
  fi
fi
say "installed ${missing[*]}"
