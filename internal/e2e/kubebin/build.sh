#!/usr/bin/env bash
# build.sh builds kube-apiserver and etcd from the Go module proxy into
# ${LISTWATCH_CACHE:-$HOME/.cache/listwatch}/kubebin-<hash>/ and prints that
# folder. The hash covers go.mod, go.sum, etcd/main.go and this script, so the binaries are
# rebuilt only when the pinned versions change. About 14 minutes cold on 2
# cores; instant when cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${LISTWATCH_CACHE:-$HOME/.cache/listwatch}
hash=$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/kubebin-$hash"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"
cd "$here"
echo "building kube-apiserver and etcd into $out (cold: about 14 minutes)" >&2
v=k8s.io/component-base/version
ldflags="-X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$out.tmp/etcd" ./etcd
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
