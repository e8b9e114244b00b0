#!/bin/sh
# Regenerates onnx.pb.go from ONNX's own onnx.proto.
#
# Needs: protoc (Debian: protobuf-compiler), protoc-gen-go
# (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12) and
# onnx.proto, by default the copy installed with ONNX's Python package
# (Debian: python3-onnx, ONNX 1.12, IR version 8, opsets up to 17). Give
# another copy as the first argument.
set -eu
cd "$(dirname "$0")"
proto=${1:-/usr/lib/python3/dist-packages/onnx/onnx.proto}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$proto" "$tmp/onnx.proto"
PATH=$PATH:$(go env GOPATH)/bin protoc -I "$tmp" \
	--go_out=. --go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/tartanml/tartan/onnx/internal/pb \
	"$tmp/onnx.proto"
