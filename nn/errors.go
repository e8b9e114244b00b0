package nn

import (
	"fmt"
	"strings"

	"github.com/tartanml/tartan/tile"
)

// Errors of this package start with "nn: ". When one gives context to
// another (a model to its layer's, Fit to a step's), the inner one's prefix
// is dropped, so that a message names the package once however deep the
// nesting:
//
//	nn: Sequential "m": layer 1 of 3 (Conv2D "conv2d"): filters 0 must be positive
//
// The outer error unwraps to the inner one, so errors.Is and errors.As see
// every cause.

// nestedError is an error given context: its text is "nn: ", the context,
// ": " and the inner error's text without its own "nn: ".
type nestedError struct {
	context string // "" for none: the inner text after "nn: "
	err     error
}

func (e *nestedError) Error() string {
	inner := strings.TrimPrefix(e.err.Error(), "nn: ")
	if e.context == "" {
		return "nn: " + inner
	}
	return "nn: " + e.context + ": " + inner
}

func (e *nestedError) Unwrap() error { return e.err }

// nestf returns err in the context that format and args describe.
func nestf(err error, format string, args ...any) error {
	return &nestedError{context: fmt.Sprintf(format, args...), err: err}
}

// bareError is an error of this package without its "nn: ", for callers
// that give it context of their own.
type bareError struct{ err error }

func (e bareError) Error() string { return strings.TrimPrefix(e.err.Error(), "nn: ") }
func (e bareError) Unwrap() error { return e.err }

// bare returns err without its "nn: " (nil for nil).
func bare(err error) error {
	if err == nil {
		return nil
	}
	return bareError{err}
}

// layerError is what went wrong with one layer: its arguments (input nil)
// or its build for inputs of some shapes. Alone it reads as Apply reports
// it:
//
//	nn: Conv2D: filters 0 must be positive
//	nn: conv2d (Conv2D) on input (None, 2, 2, 1): spatial dimension 1: …
//
// and a model that holds the layer names it by position instead (see at).
type layerError struct {
	layer Layer
	input []tile.Shape // the input shapes of a failed build; nil for the arguments
	err   error        // the cause; its text has no package or layer prefix
}

func (e *layerError) Error() string {
	if e.input == nil {
		return "nn: " + e.layer.ClassName() + ": " + e.err.Error()
	}
	return "nn: " + layerDesc(e.layer) + " on input " + fmtShapes(e.input) + ": " + e.err.Error()
}

func (e *layerError) Unwrap() error { return e.err }

// at returns the error's text for a model that names the layer by its
// position: `layer 1 of 3 (Conv2D "conv2d"): filters 0 must be positive`,
// with name the name the layer has or will have in the model ("" for
// none).
func (e *layerError) at(position, name string) string {
	s := position + " (" + e.layer.ClassName()
	if name != "" {
		s += fmt.Sprintf(" %q", name)
	}
	s += ")"
	if e.input != nil {
		s += " on input " + fmtShapes(e.input)
	}
	return s + ": " + e.err.Error()
}

// argumentError returns the error a layer's constructor recorded as a
// layerError, its text without the "nn: Class: " the constructor wrote.
func argumentError(l Layer, err error) *layerError {
	if le, ok := err.(*layerError); ok {
		return le
	}
	return &layerError{layer: l, err: strippedError{err, l.ClassName()}}
}

// strippedError is a constructor's error without "nn: " and the class
// name ("Input" for an InputLayer) before its message.
type strippedError struct {
	err   error
	class string
}

func (e strippedError) Error() string {
	s := strings.TrimPrefix(e.err.Error(), "nn: ")
	for _, c := range []string{e.class, strings.TrimSuffix(e.class, "Layer")} {
		if t, ok := strings.CutPrefix(s, c+": "); ok {
			return t
		}
	}
	return s
}

func (e strippedError) Unwrap() error { return e.err }

// textError is an error of a given text that unwraps to err.
type textError struct {
	text string
	err  error
}

func (e textError) Error() string { return e.text }
func (e textError) Unwrap() error { return e.err }
