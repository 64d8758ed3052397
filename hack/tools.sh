#!/usr/bin/env bash
# Builds the pinned binaries that the local control plane, its node, the tests and `make image`
# run, each from its own wrapper module under hack/tools/<module> so that the project's go.mod
# stays clean, and the images the node's build pods run. First it installs the Debian packages
# of the node (hack/node-packages.sh).
#
# What it builds lives in a cache outside the clone, keyed by tool, version and the wrapper's
# go.sum, so every clone on the machine reuses it; bin/<tool> is a symlink into that cache (a
# binary, or for an image an OCI image layout directory).
#
#   hack/tools.sh            build what is missing, link everything into bin/
#   hack/tools.sh kind       build and link only the named optional tools (see optional_tools)
#   hack/tools.sh --print    print the cache directory of every tool (nothing is built)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CF_HNC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cf-hnc/tools}
bindir=$root/bin
kube_version=v1.37.2
setup_envtest_version=v0.25.1
version_pkg=k8s.io/component-base/version
# Without these, the binaries report v0.0.0-master+$Format:%H$, which knative-based
# controllers (kpack) cannot parse.
kube_ldflags="-X $version_pkg.gitVersion=$kube_version -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=37 -X $version_pkg.gitTreeState=clean -X $version_pkg.gitCommit=$kube_version"
lifecycle_version=v0.20.12
# As the lifecycle's Makefile sets them; the lifecycle reports its version from cmd.Version.
lifecycle_ldflags="-X github.com/buildpacks/lifecycle/cmd.SCMRepository=github.com/buildpacks/lifecycle -X github.com/buildpacks/lifecycle/cmd.Version=${lifecycle_version#v}"
kpack_version=v0.18.0

# tool | version | wrapper module | package | extra ldflags | patch (below) | first-build minutes
tools=(
  "etcd|v3.6.16|etcd|go.etcd.io/etcd/server/v3|||3"
  "kube-apiserver|$kube_version|kube|k8s.io/kubernetes/cmd/kube-apiserver|$kube_ldflags||25"
  "kube-controller-manager|$kube_version|kube|k8s.io/kubernetes/cmd/kube-controller-manager|$kube_ldflags||5"
  "hnc-manager|v1.1.0|hnc|sigs.k8s.io/hierarchical-namespaces/cmd/manager||hnc|5"
  "kubectl-hns|v1.1.0|hnc|sigs.k8s.io/hierarchical-namespaces/cmd/kubectl|||1"
  "controller-gen|v0.23.0|controller-gen|sigs.k8s.io/controller-tools/cmd/controller-gen|||1"
  # `make lint`, which `make test` runs first: the checks of .golangci.yml.
  "golangci-lint|v2.15.0|golangci-lint|github.com/golangci/golangci-lint/v2/cmd/golangci-lint|-X main.version=2.15.0||5"
  # `make image`: the manager's container image, built with ko's library (no Docker); the
  # command is this project's own, in the wrapper module that pins ko.
  "cf-hnc-image|v0.19.1|ko|code.cloudfoundry.org/cf-hnc/hack/tools/ko/cf-hnc-image|||2"
  # The real node: the kubelet and the scheduler, with containerd and runc from Debian.
  "kubelet|$kube_version|kube|k8s.io/kubernetes/cmd/kubelet|$kube_ldflags||12"
  "kube-scheduler|$kube_version|kube|k8s.io/kubernetes/cmd/kube-scheduler|$kube_ldflags||3"
  # The Cloud Native Buildpacks lifecycle (the phases kpack's build pods run, and the launcher
  # of the app images), in its own wrapper: in kpack's it would move pins kpack shares.
  "cnb-lifecycle|$lifecycle_version|lifecycle|github.com/buildpacks/lifecycle/cmd/lifecycle|$lifecycle_ldflags||3"
  "cnb-launcher|$lifecycle_version|lifecycle|github.com/buildpacks/lifecycle/cmd/launcher|$lifecycle_ldflags||1"
)

# Built with CGO_ENABLED=0: they run inside the builder and app images, which may have no C
# library (the lifecycle's own release builds them so).
declare -A static_tools=([cnb-lifecycle]=1 [cnb-launcher]=1)

# Images for the node's registry, written as OCI image layouts by a program of ours that runs
# from its wrapper module (`go run`), once per key: the go.mod, go.sum and Go sources of the
# wrappers named (the program's own first; kpack-images builds kpack's commands with the pins
# of hack/tools/kpack). bin/<image> is the layout directory.
# image | version | wrappers | program package | first-build minutes | patch of the module built
images=(
  # The lifecycle image a ClusterLifecycle names, made of cnb-lifecycle and cnb-launcher.
  "lifecycle-image|$lifecycle_version|lifecycle|./lifecycle-image|1"
  # kpack's controller and webhook, and build-init, build-waiter, completion and rebase (the
  # images kpack's pods run), built by ko.
  "kpack-images|$kpack_version|ko,kpack|./kpack-images|15"
  # The HNC manager as cf-hnc supports it (ADR 1), built by ko: the local node runs it as a pod.
  "hnc-image|v1.1.0|ko,hnc|./hnc-image|5"
  # Traefik, the local control plane's Gateway API implementation, built by ko against a copy of
  # lego without the DNS providers whose SDKs the module proxy does not serve (hack/tools/traefik).
  "traefik-image|v3.7.13|ko,traefik|./go-image|15|lego"
  # kube-network-policies, the node's NetworkPolicy enforcer, with its queue rule patched to
  # what this kernel has (see patches) and a command of ours (hack/tools/kube-network-policies).
  "netpol-image|v0.8.0|ko,kube-network-policies|./go-image|4|netpol"
)

# What each image's program reads besides its wrapper (it writes to --oci-layout); module is the
# patched module's copy, for an image with a patch.
image_args() { # image module; sets args
  case $1 in
    lifecycle-image) args=(--lifecycle "$bindir/cnb-lifecycle" --launcher "$bindir/cnb-launcher") ;;
    kpack-images) args=(--module "$root/hack/tools/kpack") ;;
    hnc-image) args=(--module "$root/hack/tools/hnc") ;;
    traefik-image) args=(--module "$2" --package github.com/traefik/traefik/v3/cmd/traefik
      --ldflags "-X github.com/traefik/traefik/v3/pkg/version.Version=v3.7.13") ;;
    netpol-image) args=(--module "$2" --package code.cloudfoundry.org/cf-hnc/hack/tools/kube-network-policies/cmd/netpol) ;;
    *) args=() ;;
  esac
}

# Built only when named: what only some targets need (kind: `make kind-up`, which needs a
# container engine).
optional_tools=(
  "kind|v0.33.0|kind|sigs.k8s.io/kind|||1"
)

# Upstream lines changed at build time. The build copies the module into the cache, changes the
# lines, and builds against the copy (a `replace` in a generated go.mod, or, for an image, a
# generated copy of the wrapper module); the module cache and the wrapper stay untouched, and an
# upstream file that the expression no longer changes fails the build.
#   hnc: every server the project starts on the host listens on 127.0.0.1 only. HNC's webhook
#     server has no flag for its listen host (controller-runtime 0.11 binds all interfaces when
#     Options.Host is empty), and the integration suites run HNC's manager on the host. (HNC's
#     image, which the node runs as a pod, is unpatched: there it serves in the pod's network
#     namespace.)
#   lego: lego v5.4.1, which Traefik pins, imports every ACME DNS provider; the SDKs of six are
#     not served by the Go module proxy: they leave the list of providers.
#   netpol: kube-network-policies queues connections with nftables' native queue expression,
#     which this kernel lacks (CONFIG_NFT_QUEUE unset): it then fails to install its rules, says
#     so only in its log, and enforces nothing. The patch queues with the xtables compat NFQUEUE
#     target (NFT_COMPAT), which the kernel has, with the same queue number and bypass flag.
# patch name -> "module|file in module|sed options|sed expression"
declare -A patches=(
  [hnc]='sigs.k8s.io/hierarchical-namespaces|cmd/manager/main.go||s/^\(\t*\)Port: *webhookServerPort,$/&\n\1Host: "127.0.0.1",/'
  [lego]='github.com/go-acme/lego/v5|providers/dns/zz_gen_dns_providers.go|-E|/providers\/dns\/(edgedns|huaweicloud|oraclecloud|sakuracloud|ucloud|yandexcloud)"$/d; /^\tcase "(edgedns|huaweicloud|oraclecloud|sakuracloud|ucloud|yandexcloud)"[,:]/,+1d'
  [netpol]='sigs.k8s.io/kube-network-policies|pkg/networkpolicy/controller.go||s|queue := &expr.Queue{Num: uint16(c.config.QueueID)}|queue := \&expr.Target{Name: "NFQUEUE", Rev: 3, Info: \&xt.Unknown{byte(c.config.QueueID), byte(c.config.QueueID >> 8), 1, 0, 0, 0}}|; s|queue.Flag = expr.QueueFlagBypass|(*queue.Info.(*xt.Unknown))[4] = 1|; s|^\t"github.com/google/nftables/expr"$|&\n\t"github.com/google/nftables/xt"|'
)

say() { printf '[tools] %s\n' "$*" >&2; }

# The key changes with the wrapper's pins, with its own Go sources (a wrapper whose only Go file
# is tools.go has none), and with the patch, if any.
build_key() { # wrapper patch
  {
    cat "$root/hack/tools/$1/go.mod" "$root/hack/tools/$1/go.sum"
    find "$root/hack/tools/$1" -name '*.go' ! -name tools.go -print0 | LC_ALL=C sort -z | xargs -0 -r cat
    [[ -z $2 ]] || echo "${patches[$2]}"
  } | sha256sum | cut -c1-12
}

cache_dir() { # tool version wrapper patch
  printf '%s/%s-%s-%s' "$cache" "$1" "$2" "$(build_key "$3" "${4:-}")"
}

# An image's key covers every wrapper it is built from, and the patch of the module it builds.
image_dir() { # image version wrappers (comma-separated) patch
  local list key
  IFS=, read -ra list <<<"$3"
  key=$( { for w in "${list[@]}"; do build_key "$w" ""; done; [[ -z ${4:-} ]] || echo "${patches[$4]}"; } | sha256sum | cut -c1-12)
  printf '%s/%s-%s-%s' "$cache" "$1" "$2" "$key"
}

# pause is keyed like the kube wrapper's tools: its source comes from the k8s.io/kubernetes
# module that the wrapper pins.
pause_dir() {
  cache_dir pause "$kube_version" kube
}

link() { # target name
  mkdir -p "$bindir"
  ln -sfn "$1" "$bindir/$2"
}

# go build prints nothing for many minutes on a cold cache; say that it is alive.
with_heartbeat() { # label command...
  local label=$1 start=$SECONDS; shift
  ( while sleep 60; do say "still building $label ($(( (SECONDS - start) / 60 )) min so far)"; done ) &
  local beat=$!
  local rc=0
  "$@" || rc=$?
  kill "$beat" 2>/dev/null; wait "$beat" 2>/dev/null || true
  return "$rc"
}

# setup-envtest downloads release binaries of kube-apiserver and etcd in seconds where a
# network allows it. Here it fails fast and the source build is the fallback.
try_envtest_download() { # tool version dest
  [[ $1 == kube-apiserver || $1 == etcd ]] || return 1
  [[ ${CF_HNC_NO_DOWNLOAD:-} == "" ]] || return 1
  local setup_envtest
  setup_envtest=$cache/setup-envtest-$setup_envtest_version/setup-envtest
  if [[ ! -x $setup_envtest ]]; then
    mkdir -p "$(dirname "$setup_envtest")"
    GOBIN=$(dirname "$setup_envtest") go install \
      "sigs.k8s.io/controller-runtime/tools/setup-envtest@$setup_envtest_version" >/dev/null 2>&1 || return 1
  fi
  local dir
  dir=$(timeout 120 "$setup_envtest" use "${kube_version#v}" --bin-dir "$cache/envtest" -p path 2>/dev/null) || return 1
  [[ -x $dir/$1 ]] || return 1
  # envtest's bundle pairs kube-apiserver $kube_version with its own etcd; use both from it.
  cp "$dir/$1" "$3.tmp.$$" && mv -f "$3.tmp.$$" "$3"
}

# Copies the module that patch changes, as the wrapper pins it, into $2/src and changes its line;
# prints the module's path.
patched_source() { # wrapper dir patch
  local wrapper=$1 dir=$2 module file options expr src
  IFS='|' read -r module file options expr <<<"${patches[$3]}"
  # go list -m prints no directory for a module that is not downloaded yet: download it first.
  go mod download -C "$root/hack/tools/$wrapper" "$module"
  src=$(go list -C "$root/hack/tools/$wrapper" -m -f '{{.Dir}}' "$module")
  if [[ -z $src || ! -d $src ]]; then
    say "cannot find the source of $module for the patch $3"
    return 1
  fi
  rm -rf "$dir/src"
  cp -r "$src" "$dir/src"
  chmod -R u+w "$dir/src"
  # shellcheck disable=SC2086 # options is one flag or none
  sed -i $options "$expr" "$dir/src/$file"
  if cmp -s "$src/$file" "$dir/src/$file"; then
    say "the patch $3 of $module/$file no longer matches upstream; update hack/tools.sh"
    return 1
  fi
  printf '%s' "$module"
}

# Writes a go.mod that replaces the patched module with its copy (patched_source), and prints the
# -modfile flag that builds against it.
patched_modfile() { # wrapper dir patch
  local module
  module=$(patched_source "$@") || return 1
  { cat "$root/hack/tools/$1/go.mod"; printf '\nreplace %s => %s\n' "$module" "$2/src"; } >"$2/go.mod"
  cp "$root/hack/tools/$1/go.sum" "$2/go.sum"
  printf -- '-modfile=%s' "$2/go.mod"
}

# Copies the wrapper module into $2/module with a replace of the patched module by its copy
# (patched_source), and prints the copy's path: what an image program builds in (ko cannot build
# with -modfile).
patched_module() { # wrapper dir patch
  local module
  module=$(patched_source "$@") || return 1
  rm -rf "$2/module"
  cp -r "$root/hack/tools/$1" "$2/module"
  chmod -R u+w "$2/module"
  printf '\nreplace %s => %s\n' "$module" "$2/src" >>"$2/module/go.mod"
  printf '%s' "$2/module"
}

build_tool() { # tool version wrapper package ldflags patch minutes
  local tool=$1 version=$2 wrapper=$3 pkg=$4 ldflags=$5 patch=$6 minutes=$7
  local dir out modfile=() env=()
  dir=$(cache_dir "$tool" "$version" "$wrapper" "$patch")
  out=$dir/$tool
  if [[ ! -x $out ]]; then
    mkdir -p "$dir"
    if try_envtest_download "$tool" "$version" "$out"; then
      say "downloaded $tool $version with setup-envtest"
    else
      say "building $tool $version from source (the first build takes about $minutes min on 2 cores; later builds are cached)"
      [[ -z $patch ]] || modfile=("$(patched_modfile "$wrapper" "$dir" "$patch")")
      [[ -z ${static_tools[$tool]:-} ]] || env=(CGO_ENABLED=0)
      # Build to a temporary name so that a concurrent clone never runs a half-written binary.
      with_heartbeat "$tool" env "${env[@]}" go build -C "$root/hack/tools/$wrapper" -trimpath "${modfile[@]}" \
        -ldflags "-s -w $ldflags" -o "$out.tmp.$$" "$pkg"
      mv -f "$out.tmp.$$" "$out"
      say "built $tool $version"
    fi
  fi
  link "$out" "$tool"
}

# The binary of the pod sandbox ("pause") container, from the pinned k8s.io/kubernetes module,
# compiled as its build/pause/Makefile does (static, stripped, VERSION=v<TAG>-<revision>, the
# revision being the Kubernetes release here). The node's harness makes the sandbox image
# that containerd names from it.
build_pause() {
  local dir out src tag
  dir=$(pause_dir)
  out=$dir/pause
  if [[ ! -x $out ]]; then
    say "building pause from k8s.io/kubernetes $kube_version with gcc (seconds)"
    go mod download -C "$root/hack/tools/kube" k8s.io/kubernetes
    src=$(go list -C "$root/hack/tools/kube" -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause
    tag=$(sed -n 's/^TAG ?= *//p' "$src/Makefile")
    if [[ -z $tag || ! -f $src/linux/pause.c ]]; then
      say "cannot find pause.c and its TAG in $src; update hack/tools.sh"
      return 1
    fi
    mkdir -p "$dir"
    gcc -Os -Wall -Werror -static -DVERSION="v$tag-$kube_version" -o "$out.tmp.$$" "$src/linux/pause.c"
    strip "$out.tmp.$$"
    mv -f "$out.tmp.$$" "$out"
    say "built pause v$tag-$kube_version"
  fi
  link "$out" pause
}

build_image() { # image version wrappers program minutes patch
  local image=$1 version=$2 wrappers=$3 program=$4 minutes=$5 patch=${6:-}
  local dir out args module=
  dir=$(image_dir "$image" "$version" "$wrappers" "$patch")
  out=$dir/oci
  if [[ ! -d $out ]]; then
    say "building $image $version (the first build takes about $minutes min on 2 cores; later builds are cached)"
    mkdir -p "$dir"
    rm -rf "$out.tmp.$$"
    # The last wrapper is the module the program builds; a patch changes a module it requires.
    [[ -z $patch ]] || module=$(patched_module "${wrappers##*,}" "$dir" "$patch")
    image_args "$image" "$module"
    # The program prints the digest of every image it writes.
    with_heartbeat "$image" go run -C "$root/hack/tools/${wrappers%%,*}" -trimpath "$program" \
      "${args[@]}" --oci-layout "$out.tmp.$$" >&2
    # Written under a temporary name, like the binaries. If a concurrent clone wrote the same
    # key first, keep its layout.
    mv -T "$out.tmp.$$" "$out" 2>/dev/null || rm -rf "$out.tmp.$$"
    [[ -z $patch ]] || rm -rf "$dir/module" "$dir/src"
    say "built $image $version"
  fi
  link "$out" "$image"
}

if [[ ${1:-} == --print ]]; then
  for row in "${tools[@]}" "${optional_tools[@]}"; do
    IFS='|' read -r tool version wrapper _ _ patch _ <<<"$row"
    printf '%s\t%s\n' "$tool" "$(cache_dir "$tool" "$version" "$wrapper" "$patch")"
  done
  printf '%s\t%s\n' pause "$(pause_dir)"
  for row in "${images[@]}"; do
    IFS='|' read -r image version wrappers _ _ patch <<<"$row"
    printf '%s\t%s\n' "$image" "$(image_dir "$image" "$version" "$wrappers" "$patch")"
  done
  exit 0
fi

if (($# > 0)); then
  for want in "$@"; do
    found=
    for row in "${optional_tools[@]}"; do
      IFS='|' read -r tool version wrapper pkg ldflags patch minutes <<<"$row"
      if [[ $tool == "$want" ]]; then
        build_tool "$tool" "$version" "$wrapper" "$pkg" "$ldflags" "$patch" "$minutes"
        found=1
      fi
    done
    [[ -n $found ]] || { say "no optional tool $want"; exit 1; }
  done
  exit 0
fi

"$root/hack/node-packages.sh"
for row in "${tools[@]}"; do
  IFS='|' read -r tool version wrapper pkg ldflags patch minutes <<<"$row"
  build_tool "$tool" "$version" "$wrapper" "$pkg" "$ldflags" "$patch" "$minutes"
done
build_pause
# After the tools: lifecycle-image packs the lifecycle binaries linked above.
for row in "${images[@]}"; do
  IFS='|' read -r image version wrappers program minutes patch <<<"$row"
  build_image "$image" "$version" "$wrappers" "$program" "$minutes" "$patch"
done
say "all tools ready in $bindir (cache: $cache)"
