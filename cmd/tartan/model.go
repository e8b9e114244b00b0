package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tartanml/tartan/internal/fileinfo"
	"github.com/tartanml/tartan/nn"
)

// isONNX reports whether path names an ONNX file, by its extension.
func isONNX(path string) bool { return strings.EqualFold(filepath.Ext(path), ".onnx") }

// onnxError is the error for an ONNX model file given to a verb that needs
// an nn model: the command line runs ONNX models (tartan run) and
// fine-tunes them (tartan fit --model), but does not yet evaluate, predict
// with or summarise them (from Go, onnx's NNModel makes one an nn model).
// what says where the path came from (a flag or an argument).
func onnxError(what, path string) error {
	return fmt.Errorf("%s %s: this command does not take ONNX models yet (run it with tartan run %s, fine-tune it with tartan fit --model %s; from Go, onnx.Model.NNModel makes it an nn model); give a model saved by tartan fit --save (a .safetensors file)", what, path, path, path)
}

// loadModelFile loads a model written by tartan fit --save (nn.Save) or a
// checkpoint; what says where the path came from.
func loadModelFile(what, path string) (*nn.Model, error) {
	if isONNX(path) {
		return nil, onnxError(what, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is %s, not a regular file", what, path, fileinfo.Kind(fi.Mode()))
	}
	m, err := nn.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (tartan reads models saved by tartan fit --save)", what, err)
	}
	return m, nil
}
