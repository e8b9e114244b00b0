package nn

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file reads and writes the safetensors format, which PyTorch, JAX and
// others read:
//
//	8 bytes   N, the header length, unsigned little-endian
//	N bytes   a JSON object: for every tensor name,
//	          {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//	          and optionally "__metadata__": {string: string}
//	the rest  the tensors' bytes, little-endian, row-major, back to back;
//	          offsets count from the start of this part
//
// Writers pad the header with spaces so that the data starts 8-byte
// aligned. Readers here are strict: every offset pair must match its dtype
// and shape, and the tensors must tile the data part exactly, so a
// truncated file is reported, never half read.
//
// Checksums. WriteSafetensors adds one metadata entry, "checksums", whose
// value is a JSON object
//
//	{"algorithm": "crc32c", "metadata": "89abcdef",
//	 "tensors": {"dense/kernel": "01234567", …}}
//
// holding, as 8 lowercase hex digits, the CRC-32C (Castagnoli) of every
// tensor — computed over its data bytes, then its dtype, then its shape
// written as in the header ("[2,3]") — and of the other metadata entries
// (in sorted key order, each key and each value preceded by its length as 8
// little-endian bytes). The file stays a standard safetensors file; other
// tools see one more metadata string. A reader here verifies every
// checksum of a file that has them, so an altered byte anywhere in the data
// or the metadata is reported with the tensor (or the metadata) it
// damaged. Files without the entry (older Tartan files, other tools') are
// read unchecked; nn's loaders decide whether that is allowed.

// SafeTensor is one tensor of a safetensors file: its name, dtype (F32, F64,
// I64, I32, I16, I8, U8, BOOL, F16, BF16, …), shape and raw little-endian
// bytes.
type SafeTensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// stDTypeSizes are the element sizes of the safetensors dtypes.
var stDTypeSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// maxHeader bounds the JSON header, as the reference implementation does.
const maxHeader = 100 << 20

// F32Tensor returns a float32 tensor holding a copy of v.
func F32Tensor(name string, shape []int, v []float32) SafeTensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return SafeTensor{Name: name, DType: "F32", Shape: slices.Clone(shape), Data: b}
}

// I64Tensor returns an int64 tensor holding a copy of v.
func I64Tensor(name string, shape []int, v []int64) SafeTensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return SafeTensor{Name: name, DType: "I64", Shape: slices.Clone(shape), Data: b}
}

// Len returns the number of elements the shape holds.
func (t *SafeTensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32s returns the elements of an F32, F64, F16 or BF16 tensor, or of an
// integer one, as float32.
func (t *SafeTensor) Float32s() ([]float32, error) {
	n := t.Len()
	size := stDTypeSizes[t.DType]
	if size == 0 || len(t.Data) != n*size {
		return nil, fmt.Errorf("safetensors: tensor %q: %d bytes do not hold %v %s", t.Name, len(t.Data), t.Shape, t.DType)
	}
	out := make([]float32, n)
	le := binary.LittleEndian
	for i := range out {
		b := t.Data[i*size:]
		switch t.DType {
		case "F32":
			out[i] = math.Float32frombits(le.Uint32(b))
		case "F64":
			out[i] = float32(math.Float64frombits(le.Uint64(b)))
		case "BF16":
			out[i] = math.Float32frombits(uint32(le.Uint16(b)) << 16)
		case "F16":
			out[i] = halfToFloat(le.Uint16(b))
		case "U8", "BOOL":
			out[i] = float32(b[0])
		case "I8":
			out[i] = float32(int8(b[0]))
		case "I16":
			out[i] = float32(int16(le.Uint16(b)))
		case "U16":
			out[i] = float32(le.Uint16(b))
		case "I32":
			out[i] = float32(int32(le.Uint32(b)))
		case "U32":
			out[i] = float32(le.Uint32(b))
		case "I64":
			out[i] = float32(int64(le.Uint64(b)))
		case "U64":
			out[i] = float32(le.Uint64(b))
		default:
			return nil, fmt.Errorf("safetensors: tensor %q: cannot convert %s to float32", t.Name, t.DType)
		}
	}
	return out, nil
}

// Int64s returns the elements of an integer or boolean tensor.
func (t *SafeTensor) Int64s() ([]int64, error) {
	n := t.Len()
	size := stDTypeSizes[t.DType]
	if size == 0 || len(t.Data) != n*size {
		return nil, fmt.Errorf("safetensors: tensor %q: %d bytes do not hold %v %s", t.Name, len(t.Data), t.Shape, t.DType)
	}
	out := make([]int64, n)
	le := binary.LittleEndian
	for i := range out {
		b := t.Data[i*size:]
		switch t.DType {
		case "I64", "U64":
			out[i] = int64(le.Uint64(b))
		case "I32":
			out[i] = int64(int32(le.Uint32(b)))
		case "U32":
			out[i] = int64(le.Uint32(b))
		case "I16":
			out[i] = int64(int16(le.Uint16(b)))
		case "U16":
			out[i] = int64(le.Uint16(b))
		case "I8":
			out[i] = int64(int8(b[0]))
		case "U8", "BOOL":
			out[i] = int64(b[0])
		default:
			return nil, fmt.Errorf("safetensors: tensor %q is %s, not an integer type", t.Name, t.DType)
		}
	}
	return out, nil
}

// halfToFloat converts an IEEE binary16 value to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// Subnormal: value = frac · 2⁻²⁴.
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// checksumsKey is the metadata entry holding the checksums.
const checksumsKey = "checksums"

// checksumAlgorithm names the only checksum written and read.
const checksumAlgorithm = "crc32c"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksumDoc is the value of the "checksums" metadata entry.
type checksumDoc struct {
	Algorithm string            `json:"algorithm"`
	Metadata  string            `json:"metadata"`
	Tensors   map[string]string `json:"tensors"`
}

// tensorChecksum returns the CRC-32C of a tensor's data, dtype and shape.
func tensorChecksum(dtype string, shape []int, data []byte) string {
	h := crc32.New(castagnoli)
	h.Write(data)
	h.Write([]byte(dtype))
	h.Write([]byte(shapeText(shape)))
	return fmt.Sprintf("%08x", h.Sum32())
}

// shapeText writes a shape as the header does: "[2,3]".
func shapeText(shape []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// metadataChecksum returns the CRC-32C of every metadata entry but the
// checksums themselves, in sorted key order, each key and value preceded by
// its length.
func metadataChecksum(meta map[string]string) string {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if k != checksumsKey {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := crc32.New(castagnoli)
	var n [8]byte
	for _, k := range keys {
		for _, s := range []string{k, meta[k]} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// withChecksums returns metadata with the "checksums" entry for tensors
// added.
func withChecksums(tensors []SafeTensor, metadata map[string]string) (map[string]string, error) {
	if _, ok := metadata[checksumsKey]; ok {
		return nil, fmt.Errorf("safetensors: metadata key %q is reserved for the checksums WriteSafetensors adds", checksumsKey)
	}
	doc := checksumDoc{Algorithm: checksumAlgorithm, Metadata: metadataChecksum(metadata), Tensors: map[string]string{}}
	for _, t := range tensors {
		doc.Tensors[t.Name] = tensorChecksum(t.DType, t.Shape, t.Data)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(metadata)
	if out == nil {
		out = map[string]string{}
	}
	out[checksumsKey] = string(js)
	return out, nil
}

// decodeChecksums decodes the "checksums" entry, matching its keys exactly
// and rejecting any other.
func decodeChecksums(js string) (checksumDoc, error) {
	var doc checksumDoc
	var raw map[string]json.RawMessage
	if err := strictJSON([]byte(js), &raw); err != nil {
		return doc, err
	}
	for k, v := range raw {
		var err error
		switch k {
		case "algorithm":
			err = json.Unmarshal(v, &doc.Algorithm)
		case "metadata":
			err = json.Unmarshal(v, &doc.Metadata)
		case "tensors":
			err = json.Unmarshal(v, &doc.Tensors)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return doc, err
		}
	}
	if doc.Algorithm == "" || doc.Metadata == "" || doc.Tensors == nil {
		return doc, errors.New("it lacks the algorithm, the metadata checksum or the tensors' checksums")
	}
	return doc, nil
}

// verifyChecksums checks the tensors and metadata of a parsed file against
// its "checksums" entry, when it has one.
func verifyChecksums(tensors []SafeTensor, meta map[string]string) error {
	js, ok := meta[checksumsKey]
	if !ok {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSafetensors, fmt.Sprintf(format, args...))
	}
	doc, err := decodeChecksums(js)
	if err != nil {
		return bad("the checksums entry is damaged: %v", err)
	}
	if doc.Algorithm != checksumAlgorithm {
		return bad("checksum algorithm %q is not %s", doc.Algorithm, checksumAlgorithm)
	}
	if got := metadataChecksum(meta); got != doc.Metadata {
		return bad("the metadata does not match its checksum (%s %s recorded, %s computed): the file is damaged", checksumAlgorithm, doc.Metadata, got)
	}
	for _, t := range tensors {
		want, ok := doc.Tensors[t.Name]
		if !ok {
			return bad("tensor %q has no checksum (the header is damaged)", t.Name)
		}
		if got := tensorChecksum(t.DType, t.Shape, t.Data); got != want {
			return bad("tensor %q does not match its checksum (%s %s recorded, %s computed): the file is damaged", t.Name, checksumAlgorithm, want, got)
		}
	}
	if len(doc.Tensors) != len(tensors) {
		for name := range doc.Tensors {
			if !slices.ContainsFunc(tensors, func(t SafeTensor) bool { return t.Name == name }) {
				return bad("the checksums list tensor %q, which the file lacks (the header is damaged)", name)
			}
		}
	}
	return nil
}

// WriteSafetensors writes tensors and string metadata as a safetensors file
// at path, atomically: to a temporary file in the same directory, synced,
// then renamed over path. It adds the "checksums" metadata entry.
func WriteSafetensors(path string, tensors []SafeTensor, metadata map[string]string) error {
	meta, err := withChecksums(tensors, metadata)
	if err != nil {
		return err
	}
	return writeSafetensors(path, tensors, meta)
}

// writeSafetensors writes a safetensors file with exactly the metadata
// given.
func writeSafetensors(path string, tensors []SafeTensor, metadata map[string]string) error {
	header, err := safetensorsHeader(tensors, metadata)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, func(w io.Writer) error { return writeSafetensorsTo(w, header, tensors) })
}

// writeSafetensorsTo writes a file's contents: the header's length, the
// header, the tensors' data.
func writeSafetensorsTo(w io.Writer, header []byte, tensors []SafeTensor) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// encodeSafetensors returns the contents WriteSafetensors would write,
// checksums included.
func encodeSafetensors(tensors []SafeTensor, metadata map[string]string) ([]byte, error) {
	meta, err := withChecksums(tensors, metadata)
	if err != nil {
		return nil, err
	}
	return encodeSafetensorsRaw(tensors, meta)
}

// encodeSafetensorsRaw returns a file's contents with exactly the metadata
// given.
func encodeSafetensorsRaw(tensors []SafeTensor, metadata map[string]string) ([]byte, error) {
	header, err := safetensorsHeader(tensors, metadata)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeSafetensorsTo(&b, header, tensors); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// safetensorsHeader returns the padded JSON header describing tensors in
// order.
func safetensorsHeader(tensors []SafeTensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	if len(metadata) > 0 {
		sep()
		b.WriteString(`"__metadata__":`)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range metadata {
				if !yield(k) {
					return
				}
			}
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(metadata[k])
			b.Write(kb)
			b.WriteByte(':')
			b.Write(vb)
		}
		b.WriteByte('}')
	}
	seen := map[string]bool{}
	off := 0
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" || seen[t.Name] {
			return nil, fmt.Errorf("safetensors: tensor name %q is empty, reserved or repeated", t.Name)
		}
		seen[t.Name] = true
		size := stDTypeSizes[t.DType]
		if size == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q has unknown dtype %q", t.Name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q has a negative dimension in %v", t.Name, t.Shape)
			}
		}
		if len(t.Data) != t.Len()*size {
			return nil, fmt.Errorf("safetensors: tensor %q of shape %v and dtype %s needs %d bytes, has %d", t.Name, t.Shape, t.DType, t.Len()*size, len(t.Data))
		}
		sep()
		nb, _ := json.Marshal(t.Name)
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		sb, _ := json.Marshal(shape)
		b.Write(nb)
		fmt.Fprintf(&b, `:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.DType, sb, off, off+len(t.Data))
		off += len(t.Data)
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), nil
}

// ReadSafetensors reads a safetensors file: its tensors in the order of
// their data, and its metadata. A damaged file (truncated, a header that is
// not valid JSON, offsets that disagree with the shapes or leave gaps, a
// tensor or the metadata that does not match its checksum) is an error
// naming the file and what is wrong.
func ReadSafetensors(path string) ([]SafeTensor, map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	ts, meta, err := parseSafetensors(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, meta, nil
}

// stEntry is one tensor's header entry.
type stEntry struct {
	DType   string
	Shape   []int
	Offsets []int
}

// decodeEntry decodes a tensor's header entry. Its keys are matched
// exactly (encoding/json would accept "Dtype" for "dtype"); unknown keys
// are ignored, as other readers ignore them.
func decodeEntry(dec *json.Decoder) (stEntry, error) {
	var raw map[string]json.RawMessage
	var e stEntry
	if err := dec.Decode(&raw); err != nil {
		return e, err
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"dtype", &e.DType}, {"shape", &e.Shape}, {"data_offsets", &e.Offsets}} {
		r, ok := raw[f.key]
		if !ok {
			return e, fmt.Errorf("no %q", f.key)
		}
		if err := json.Unmarshal(r, f.v); err != nil {
			return e, fmt.Errorf("%q: %v", f.key, err)
		}
	}
	return e, nil
}

// ErrBadSafetensors is wrapped by every error about a damaged safetensors
// file.
var ErrBadSafetensors = errors.New("not a valid safetensors file")

func parseSafetensors(raw []byte) ([]SafeTensor, map[string]string, error) {
	tensors, meta, err := parseSafetensorsLayout(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := verifyChecksums(tensors, meta); err != nil {
		return nil, nil, err
	}
	return tensors, meta, nil
}

// parseSafetensorsLayout parses a file and checks its layout, not its
// checksums.
func parseSafetensorsLayout(raw []byte) ([]SafeTensor, map[string]string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSafetensors, fmt.Sprintf(format, args...))
	}
	if len(raw) < 8 {
		return nil, nil, bad("%d bytes is too short for the 8-byte header length (truncated?)", len(raw))
	}
	n := binary.LittleEndian.Uint64(raw)
	if n > maxHeader {
		return nil, nil, bad("header length %d exceeds the %d-byte limit", n, maxHeader)
	}
	if 8+n > uint64(len(raw)) {
		return nil, nil, bad("header of %d bytes but the file has only %d after the length (truncated?)", n, len(raw)-8)
	}
	head := raw[8 : 8+n]
	body := raw[8+n:]
	dec := json.NewDecoder(bytes.NewReader(head))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, bad("the header is not a JSON object")
	}
	type located struct {
		t      SafeTensor
		lo, hi int
	}
	var found []located
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad("header JSON: %v", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, nil, bad("name %q appears twice in the header", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, bad("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		e, err := decodeEntry(dec)
		if err != nil {
			return nil, nil, bad("entry %q: %v", name, err)
		}
		size := stDTypeSizes[e.DType]
		if size == 0 {
			return nil, nil, bad("tensor %q has unknown dtype %q", name, e.DType)
		}
		if e.Shape == nil || len(e.Offsets) != 2 {
			return nil, nil, bad("tensor %q lacks a shape or a pair of data_offsets", name)
		}
		count := 1
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt32/d) {
				return nil, nil, bad("tensor %q has a bad shape %v", name, e.Shape)
			}
			count *= d
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi < lo || hi-lo != count*size {
			return nil, nil, bad("tensor %q: offsets [%d, %d] do not hold %v %s (%d bytes)", name, lo, hi, e.Shape, e.DType, count*size)
		}
		if hi > len(body) {
			return nil, nil, bad("tensor %q ends at byte %d of the data, but the file holds only %d data bytes (truncated?)", name, hi, len(body))
		}
		found = append(found, located{SafeTensor{Name: name, DType: e.DType, Shape: e.Shape, Data: slices.Clone(body[lo:hi])}, lo, hi})
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, bad("header JSON: %v", err)
	}
	if rest := strings.TrimSpace(string(head[dec.InputOffset():])); rest != "" {
		return nil, nil, bad("unexpected text after the header object")
	}
	// The tensors must tile the data exactly: sorted by offset, each starts
	// where the previous ends, and the last ends at the end of the file.
	slices.SortStableFunc(found, func(a, b located) int {
		if a.lo != b.lo {
			return a.lo - b.lo
		}
		return a.hi - b.hi
	})
	end := 0
	tensors := make([]SafeTensor, len(found))
	for i, f := range found {
		if f.lo != end {
			if f.lo < end {
				return nil, nil, bad("tensor %q overlaps the tensor before it", f.t.Name)
			}
			return nil, nil, bad("a gap of %d bytes before tensor %q", f.lo-end, f.t.Name)
		}
		end = f.hi
		tensors[i] = f.t
	}
	if end != len(body) {
		return nil, nil, bad("%d data bytes follow the last tensor", len(body)-end)
	}
	return tensors, meta, nil
}

// writeFileAtomic writes a file through write to a temporary name in the
// directory of path's final target, syncs it, renames it onto the target
// and syncs the directory, so that the file holds either its old contents
// or the complete new ones, whatever happens.
//
// When path is a symbolic link (or a chain of them), the file written is
// the link's target: the temporary file goes beside the target and is
// renamed onto it, so the link stays a link. A dangling link's target is
// created.
//
// The temporary file is named ".<name>.tmp-<digits>" and locked (flock)
// while it is written. A save killed mid-write leaves such a file behind;
// the next save to the same target removes every one of them that is
// older than the start of that save and that no process holds locked.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	target, err := resolveLinks(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	what := path
	if target != path {
		what = fmt.Sprintf("%s (the target of link %s)", target, path)
	}
	dir, base := splitPath(target)
	start := time.Now()
	f, err := createLockedTemp(dir, base)
	if err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	removeStaleTemps(dir, base, tmp, start)
	// CreateTemp makes the file private; give it the usual permissions.
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", what, err)
	}
	if !renameOpenFiles {
		closed = true
		if err = f.Close(); err != nil {
			return fmt.Errorf("closing %s: %w", what, err)
		}
	}
	// Renamed while still locked, where the system allows it, so that no
	// other save takes the finished file for a stale one.
	if err = os.Rename(tmp, target); err != nil {
		return fmt.Errorf("renaming %s into place: %w", what, err)
	}
	if !closed {
		closed = true
		if err = f.Close(); err != nil {
			return fmt.Errorf("closing %s: %w", what, err)
		}
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// maxLinks bounds the symbolic links followed from one path, as the
// kernel does (ELOOP).
const maxLinks = 40

// resolveLinks follows path through symbolic links to the file they end
// at, which may not exist yet. A relative link is taken from the directory
// holding it, without cleaning "..", as the kernel takes it.
func resolveLinks(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			dir, _ := splitPath(p)
			t = dir + string(filepath.Separator) + t
		}
		p = t
	}
	return "", fmt.Errorf("more than %d levels of symbolic links from %s (a loop?)", maxLinks, path)
}

// tempPrefix is the start of the temporary files' names for a target.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// createLockedTemp creates the temporary file for target base in dir and
// locks it. A stale-file sweep of another save may remove the file between
// its creation and the lock; then it is made anew.
func createLockedTemp(dir, base string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		if sameFile(f, f.Name()) {
			return f, nil
		}
		f.Close()
	}
}

// sameFile reports whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// removeStaleTemps removes the temporary files of earlier saves to target
// base in dir that were killed mid-write: regular files named by
// tempPrefix and digits, other than own, last modified before start, and
// not locked by a save in progress.
func removeStaleTemps(dir, base, own string, start time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := tempPrefix(base)
	for _, e := range entries {
		name := e.Name()
		digits := strings.TrimPrefix(name, prefix)
		if digits == name || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		p := dir + string(filepath.Separator) + name
		if p == own {
			continue
		}
		if info, err := e.Info(); err != nil || !info.ModTime().Before(start) {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if tryLockFile(f) && sameFile(f, p) {
			os.Remove(p)
		}
		f.Close()
	}
}

// splitPath returns a path's directory ("." when none) and base name.
func splitPath(path string) (dir, base string) {
	i := strings.LastIndexAny(path, `/\`)
	if i < 0 {
		return ".", path
	}
	if i == 0 {
		return "/", path[1:]
	}
	return path[:i], path[i+1:]
}
