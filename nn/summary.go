package nn

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tartanml/tartan/tile"
)

// Summary returns the model's description as Keras 3 prints it: its name, a
// table of its layers with their output shapes and parameter counts, and the
// total, trainable and non-trainable parameter counts with their size in
// memory (float32). A functional model whose layers are not a simple chain
// also lists what every layer is connected to. A layer call of several
// outputs (see ApplyAll) shows them all, [(None, 8), (None, 8)], and a
// connection to output j of call k of a layer reads name[k][j].
func (m *Model) Summary() string {
	connected := m.class == "Functional" && !m.isChain()
	headers := []string{"Layer (type)", "Output Shape", "Param #"}
	if connected {
		headers = append(headers, "Connected to")
	}
	var rows [][]string
	calls, nodeIndex := m.calls()
	for _, n := range calls {
		_, isInput := n.layer.(*inputLayer)
		if isInput && m.class == "Sequential" {
			continue
		}
		params := 0
		if nodeIndex[n] == 0 {
			for _, w := range n.layer.Weights() {
				params += w.Size()
			}
		}
		shape := fmtShape(n.shape)
		if n.outs != nil {
			shapes := make([]tile.Shape, len(n.outs))
			for i, o := range n.outs {
				shapes[i] = o.shape
			}
			shape = fmtShapes(shapes)
		}
		row := []string{n.layer.Name() + " (" + n.layer.ClassName() + ")", shape, groupDigits(params)}
		if connected {
			var from []string
			for _, x := range n.in {
				from = append(from, fmt.Sprintf("%s[%d][%d]", x.layer.Name(), nodeIndex[x.call()], x.index))
			}
			if len(from) == 0 {
				from = []string{"-"}
			}
			row = append(row, strings.Join(from, ", "))
		}
		rows = append(rows, row)
	}
	widths := []int{31, 22, 13, 22}[:len(headers)]
	for _, r := range append([][]string{headers}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	rightAligned := func(i int) bool { return i == 2 }
	cell := func(s string, i int) string {
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s))
		if rightAligned(i) {
			return " " + pad + s + " "
		}
		return " " + s + pad + " "
	}
	rule := func(left, mid, right, fill string) string {
		parts := make([]string, len(widths))
		for i, w := range widths {
			parts[i] = strings.Repeat(fill, w+2)
		}
		return left + strings.Join(parts, mid) + right + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %q\n", m.name)
	b.WriteString(rule("┏", "┳", "┓", "━"))
	b.WriteString("┃")
	for i, h := range headers {
		b.WriteString(cell(h, i) + "┃")
	}
	b.WriteString("\n")
	b.WriteString(rule("┡", "╇", "┩", "━"))
	for k, r := range rows {
		b.WriteString("│")
		for i, c := range r {
			b.WriteString(cell(c, i) + "│")
		}
		b.WriteString("\n")
		if k+1 < len(rows) {
			b.WriteString(rule("├", "┼", "┤", "─"))
		}
	}
	b.WriteString(rule("└", "┴", "┘", "─"))
	total, trainable := m.CountParams()
	fmt.Fprintf(&b, " Total params: %s (%s)\n", groupDigits(total), readableSize(4*total))
	fmt.Fprintf(&b, " Trainable params: %s (%s)\n", groupDigits(trainable), readableSize(4*trainable))
	fmt.Fprintf(&b, " Non-trainable params: %s (%s)\n", groupDigits(total-trainable), readableSize(4*(total-trainable)))
	return b.String()
}

// isChain reports whether every layer call takes the previous call's first
// output.
func (m *Model) isChain() bool {
	calls, _ := m.calls()
	for i, n := range calls {
		if i == 0 {
			continue
		}
		if len(n.in) != 1 || n.in[0] != calls[i-1] {
			return false
		}
	}
	return len(m.inputs) == 1
}

// groupDigits formats n with commas between thousands: 412,778.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// readableSize formats a byte count as Keras does: 1.57 MB, with units of
// 1024.
func readableSize(bytes int) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	v := float64(bytes)
	for _, u := range units {
		if v/1024 < 1 {
			return fmt.Sprintf("%.2f %s", v, u)
		}
		v /= 1024
	}
	return fmt.Sprintf("%.2f %s", v*1024, units[len(units)-1])
}
