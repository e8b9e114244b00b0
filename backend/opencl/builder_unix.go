//go:build unix

package opencl

import (
	"encoding/json"
	"os"
	"os/exec"
	"sync"
)

// spawnBuilder starts the running executable as a helper building
// programs for device id, talking over two pipes (its descriptors 3 and
// 4). The helper's own output goes to this process's standard error.
func spawnBuilder(id string) (*builder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), EnvBuilder+"="+id)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{reqR, repW}
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{reqR, reqW, repR, repW} {
			f.Close()
		}
		return nil, err
	}
	reqR.Close()
	repW.Close()
	var once sync.Once
	return &builder{
		enc:  json.NewEncoder(reqW),
		dec:  json.NewDecoder(repR),
		kill: func() { cmd.Process.Kill() },
		stop: func() {
			once.Do(func() {
				reqW.Close() // the helper sees the end of its requests and exits
				repR.Close()
				cmd.Wait()
			})
		},
	}, nil
}
