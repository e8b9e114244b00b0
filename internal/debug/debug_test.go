package debug

import "testing"

func TestOn(t *testing.T) {
	for _, c := range []struct {
		env, topic string
		want       bool
	}{
		{"", "timing", false},
		{"timing", "timing", true},
		{"kernels, Timing", "timing", true},
		{"kernels,schedule", "timing", false},
		{"all", "memory", true},
		{"timings", "timing", false},
	} {
		t.Setenv("TARTAN_DEBUG", c.env)
		if got := On(c.topic); got != c.want {
			t.Errorf("TARTAN_DEBUG=%q: On(%q) = %v, want %v", c.env, c.topic, got, c.want)
		}
	}
}
