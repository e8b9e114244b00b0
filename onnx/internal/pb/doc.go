// Package pb holds the Go types of ONNX's protocol buffers (ModelProto,
// GraphProto, NodeProto, TensorProto and the rest), generated from ONNX's
// own onnx.proto by gen.sh. Do not edit onnx.pb.go by hand: run
//
//	go generate ./onnx/internal/pb
//
// with protoc and protoc-gen-go installed (see gen.sh).
package pb

//go:generate sh gen.sh
