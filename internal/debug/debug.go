// Package debug reads TARTAN_DEBUG, the comma-separated list of topics on
// which Tartan's packages report to standard error: "kernels" (generated
// kernels), "schedule" (schedule decisions), "memory" (the slot plan),
// "timing" (compile passes, program builds, Fit's host time); "all" turns
// every topic on. Topics are case-insensitive; unknown ones are ignored.
package debug

import (
	"os"
	"strings"
)

// On reports whether TARTAN_DEBUG lists topic (or "all").
func On(topic string) bool {
	for _, w := range strings.Split(os.Getenv("TARTAN_DEBUG"), ",") {
		w = strings.ToLower(strings.TrimSpace(w))
		if w == topic || w == "all" {
			return true
		}
	}
	return false
}
