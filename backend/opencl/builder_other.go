//go:build !unix

package opencl

import "errors"

// spawnBuilder is not available here: every program is built in-process.
func spawnBuilder(id string) (*builder, error) {
	return nil, errors.New("opencl: no builder processes on this system")
}
