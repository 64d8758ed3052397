#!/usr/bin/env bash
# Makes a kind cluster that runs what cf-hnc needs and cf-hnc itself, for `make e2e-cluster`:
#
#   1. a kind cluster (sigs.k8s.io/kind v0.33.0, built by hack/tools.sh kind);
#   2. HNC v1.1.0 from its release manifest, with cf-hnc's image of HNC (hack/tools/ko/hnc-image,
#      loaded into the nodes), the flags of config/hnc/manager-args.yaml and the object webhook
#      as config/hnc/objects-webhook.yaml narrows it (docs/install.md);
#   3. kpack v0.18.0 from its release manifest;
#   4. cf-hnc: `make image` as a docker tarball, `kind load image-archive`, `make deploy`.
#
# It needs a container engine (Docker or Podman) and the internet (kind's node image, HNC's and
# kpack's manifests and images). The machines cf-hnc is developed on have neither, so this
# script has not been run there; it stops at once when no engine answers.
#
#   KIND_CLUSTER   the cluster's name (cf-hnc)
#   HNC_MANIFEST   HNC's release manifest (v1.1.0's default.yaml)
#   KPACK_MANIFEST kpack's release manifest (v0.18.0's release-0.18.0.yaml)
#   IMAGE_TAG      the tag of the manager's image (set by make)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cluster=${KIND_CLUSTER:-cf-hnc}
hnc_manifest=${HNC_MANIFEST:-https://github.com/kubernetes-sigs/hierarchical-namespaces/releases/download/v1.1.0/default.yaml}
kpack_manifest=${KPACK_MANIFEST:-https://github.com/buildpacks-community/kpack/releases/download/v0.18.0/release-0.18.0.yaml}
tag=${IMAGE_TAG:-dev}
image_repo=cf-hnc.local/cf-hnc-manager
hnc_image_repo=cf-hnc.local/hnc-manager
hnc_image_tag=v1.1.0-cf-hnc
say() { printf '[kind-up] %s\n' "$*" >&2; }

engine=
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null && "$candidate" info >/dev/null 2>&1; then
    engine=$candidate
    break
  fi
done
if [[ -z $engine ]]; then
  say "no container engine answers (docker info, podman info): kind cannot make a cluster here."
  say "Use make e2e-cluster against any cluster with HNC, kpack and cf-hnc instead (docs/install.md)."
  exit 1
fi
[[ $engine == podman ]] && export KIND_EXPERIMENTAL_PROVIDER=podman
command -v kubectl >/dev/null || { say "kubectl is needed"; exit 1; }

hack/tools.sh kind
kind=$root/bin/kind
if ! "$kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
  say "creating the kind cluster $cluster"
  "$kind" create cluster --name "$cluster" --wait 3m
fi
kubeconfig=$root/.local/kind-$cluster.kubeconfig
mkdir -p "$(dirname "$kubeconfig")"
"$kind" get kubeconfig --name "$cluster" >"$kubeconfig"
export KUBECONFIG=$kubeconfig

say "building cf-hnc's HNC image and loading it into the cluster's nodes"
mkdir -p .local/image
go run -C hack/tools/ko ./hnc-image --module ../hnc --tarball "$root/.local/image/hnc.tar" \
  --tarball-ref "$hnc_image_repo" --tag "$hnc_image_tag"
"$kind" load image-archive .local/image/hnc.tar --name "$cluster"

say "installing HNC v1.1.0 with cf-hnc's image, flags and object webhook"
kubectl apply -f "$hnc_manifest"
kubectl -n hnc-system patch deployment hnc-controller-manager --type strategic --patch-file config/hnc/manager-args.yaml
kubectl -n hnc-system set image deployment/hnc-controller-manager manager="$hnc_image_repo:$hnc_image_tag"
kubectl patch validatingwebhookconfiguration hnc-validating-webhook-configuration --type strategic \
  --patch-file config/hnc/objects-webhook.yaml
kubectl -n hnc-system rollout status deployment/hnc-controller-manager --timeout 5m

say "installing kpack v0.18.0"
kubectl apply -f "$kpack_manifest"
kubectl -n kpack rollout status deployment/kpack-controller --timeout 5m
kubectl -n kpack rollout status deployment/kpack-webhook --timeout 5m

say "building cf-hnc's image and loading it into the cluster's nodes"
make image IMAGE_TAG="$tag" IMAGE_TARBALL=.local/image/cf-hnc.tar IMAGE_TARBALL_REPO="$image_repo"
"$kind" load image-archive .local/image/cf-hnc.tar --name "$cluster"
make deploy IMG="$image_repo:$tag" API_URL=https://127.0.0.1:9000
kubectl -n cf-hnc-system rollout status deployment/cf-hnc-manager --timeout 5m

say "ready. Run the e2e specs that need only a cluster:"
say "  KUBECONFIG=$kubeconfig make e2e-cluster"
