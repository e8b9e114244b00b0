package device

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// How an entry's place among the devices was decided (Entry.RankedBy).
const (
	// RankedByKind: by kind, then compute units and memory (better).
	RankedByKind = "kind"
	// RankedByMeasured: against the other backends of the same hardware,
	// by the measured training step.
	RankedByMeasured = "measured"
)

// rank orders es best first and marks the best Recommended: by kind
// (better), except that the entries of the same hardware (sameHardware)
// that carry a measurement trade places by their measured step, the
// fastest taking the best of their places. An entry without a measurement,
// or one that cannot be used, keeps its place. It sets each entry's order,
// RankedBy and SameHardware.
func rank(es []Entry) {
	n := len(es)
	if n == 0 {
		return
	}
	base := make([]int, n)
	for i := range base {
		base[i] = i
	}
	sort.SliceStable(base, func(a, b int) bool { return better(es[base[a]], es[base[b]]) })

	// Group the entries of the same hardware: the connected parts of the
	// relation, as name matching need not be transitive.
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if sameHardware(es[i], es[j]) {
				parent[find(j)] = find(i)
			}
		}
	}

	order := slices.Clone(base)
	for i := range es {
		es[i].RankedBy, es[i].SameHardware = RankedByKind, nil
		for j := range es {
			if j != i && find(j) == find(i) {
				es[i].SameHardware = append(es[i].SameHardware, es[j].ID)
			}
		}
	}
	groups := map[int][]int{} // root → positions in base of its measured entries
	for pos, i := range base {
		if es[i].Measured != nil && es[i].rank > 0 {
			groups[find(i)] = append(groups[find(i)], pos)
		}
	}
	for _, slots := range groups {
		if len(slots) < 2 {
			continue
		}
		members := make([]int, len(slots))
		for k, pos := range slots {
			members[k] = base[pos]
		}
		sort.SliceStable(members, func(a, b int) bool { return es[members[a]].Measured.Step < es[members[b]].Measured.Step })
		for k, pos := range slots {
			order[pos] = members[k]
			es[members[k]].RankedBy = RankedByMeasured
		}
	}
	for pos, i := range order {
		es[i].order = pos
		es[i].Recommended = pos == 0
	}
}

// cpuKind reports whether kind is a way of running on the host's CPU.
func cpuKind(kind string) bool {
	return kind == KindCPU || kind == KindCPUOpenCL || kind == KindCPUVulkan
}

// sameHardware reports whether a and b are two ways to the same hardware:
// both on the host's CPU (Tartan's CPU backend, OpenCL and Vulkan on the
// CPU), or two devices that are not CPUs with the same PCI vendor and
// device ids (Vulkan reports both), or of the same vendor (PCI id, or the
// vendor's name) whose names match (sameName). OpenCL reports no PCI
// device id and no bus address, so two cards of one model are taken for
// the same hardware too; as they are equally fast, that only lets their
// measurements order them.
func sameHardware(a, b Entry) bool {
	if cpuKind(a.Kind) || cpuKind(b.Kind) {
		return cpuKind(a.Kind) && cpuKind(b.Kind)
	}
	if a.pciVendor != 0 && a.pciVendor == b.pciVendor && a.pciDevice != 0 && a.pciDevice == b.pciDevice {
		return true
	}
	sameVendor := a.pciVendor != 0 && a.pciVendor == b.pciVendor
	if !sameVendor {
		va, vb := nameTokens(a.Vendor), nameTokens(b.Vendor)
		sameVendor = len(va) > 0 && len(vb) > 0 && va[0] == vb[0]
	}
	return sameVendor && sameName(a.Name, b.Name)
}

// sameName reports whether two backends' names of a device name the same
// one: the words of one (letters and digits, lower case, without the (R)
// and (TM) marks) appear in a row in the other. So "Intel(R) UHD Graphics
// 770" matches Vulkan's "Intel(R) UHD Graphics 770 (ADL-S GT1)", and
// OpenCL's "gfx90a" matches "AMD Instinct MI210 (RADV GFX90A)".
func sameName(a, b string) bool {
	ta, tb := nameTokens(a), nameTokens(b)
	if len(ta) == 0 || len(tb) == 0 {
		return false
	}
	if len(ta) > len(tb) {
		ta, tb = tb, ta
	}
	for i := 0; i+len(ta) <= len(tb); i++ {
		if slices.Equal(ta, tb[i:i+len(ta)]) {
			return true
		}
	}
	return false
}

// nameTokens splits a name into lower-case words of letters and digits,
// dropping the marks "(R)" and "(TM)" and the ® and ™ signs.
func nameTokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if w != "r" && w != "tm" {
			out = append(out, w)
		}
	}
	return out
}

// Ranking says in words how e's place was decided: by kind, or by the
// measured step against the other backends of the same hardware.
func (l Listing) Ranking(e Entry) string {
	if e.RankedBy != RankedByMeasured {
		if e.Measured != nil {
			return fmt.Sprintf("ranked by kind (measured: a training step in %s)", formatDuration(e.Measured.Step))
		}
		return "ranked by kind"
	}
	var others []string
	for _, id := range e.SameHardware {
		o, ok := l.Find(id)
		if ok && o.RankedBy == RankedByMeasured && o.Measured != nil {
			others = append(others, formatDuration(o.Measured.Step)+" on "+o.ID)
		}
	}
	hw := "hardware"
	if cpuKind(e.Kind) {
		hw = "CPU"
	} else if e.Kind == KindGPU || e.Kind == KindIntegratedGPU {
		hw = "GPU"
	}
	return fmt.Sprintf("ranked by measured speed: a training step in %s, against %s (the same %s)",
		formatDuration(e.Measured.Step), joinAnd(others), hw)
}

// Reason is e.Why followed by how its place was decided (Ranking).
func (l Listing) Reason(e Entry) string {
	if e.Why == "" {
		return l.Ranking(e)
	}
	return e.Why + "; " + l.Ranking(e)
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
