package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildTartan builds the command into dir and returns its path.
func buildTartan(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build tartan with: %v", err)
	}
	bin := filepath.Join(dir, "tartan")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestKilledRunResumes starts tartan fit with a checkpoint, kills it with
// SIGKILL as soon as the first checkpoint appears (mid-way through epoch
// 2), and starts it again: the second run must resume at epoch 2, finish
// epoch 3, report the whole history and reach the accuracy of such a run.
func TestKilledRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and trains for about half a minute")
	}
	data := fashionDir(t)
	tmp := t.TempDir()
	bin := buildTartan(t, tmp)
	ck := filepath.Join(tmp, "run.ckpt")
	js := filepath.Join(tmp, "run.json")
	args := []string{"fit", "--limit", "2000", "--epochs", "3", "--checkpoint", ck, "--data", data, "--device", "cpu", "--json", js}

	var first bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(5 * time.Minute)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("the first run ended before its first checkpoint (%v):\n%s", err, first.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no checkpoint after 5 minutes:\n%s", first.String())
		case <-time.After(5 * time.Millisecond):
			if _, err := os.Stat(ck); err == nil {
				break wait
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	<-done
	if strings.Contains(first.String(), "Test accuracy") {
		t.Fatalf("the first run finished before it was killed:\n%s", first.String())
	}

	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the resumed run failed: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "Resuming from "+ck+": 1 of 3 epochs done") {
		t.Errorf("the resumed run does not say it resumes after epoch 1:\n%s", s)
	}
	epochs := []string{}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "Epoch ") {
			epochs = append(epochs, l)
		}
	}
	if strings.Join(epochs, ",") != "Epoch 2/3,Epoch 3/3" {
		t.Errorf("the resumed run ran %v, want epochs 2 and 3:\n%s", epochs, s)
	}
	var rep fitReport
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.History["loss"]) != 3 || len(rep.EpochSeconds) != 3 {
		t.Errorf("history %v, epoch times %v; want all 3 epochs", rep.History, rep.EpochSeconds)
	}
	// The showcase CNN on 2,000 samples for 3 epochs reaches about 0.75 to
	// 0.8 on the test set.
	if rep.TestAccuracy < 0.7 {
		t.Errorf("test accuracy %v after resuming, want at least 0.7", rep.TestAccuracy)
	}
	t.Logf("resumed run: loss %v, test accuracy %.4f", rep.History["loss"], rep.TestAccuracy)
}
