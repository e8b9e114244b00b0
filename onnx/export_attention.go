package onnx

import (
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/tartanml/tartan/onnx/internal/pb"
)

// The export of MultiHeadAttention and PositionEmbedding.

// initBool adds a bool initializer and returns its name.
func (e *exporter) initBool(base string, dims []int, data []bool) string {
	name := e.fresh(base)
	v := make([]int32, len(data))
	for i, b := range data {
		if b {
			v[i] = 1
		}
	}
	e.g.Initializer = append(e.g.Initializer, &pb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(pb.TensorProto_BOOL)), Dims: int64s(dims), Int32Data: v,
	})
	return name
}

// attention exports MultiHeadAttention on (query, value), (query, value,
// key) or (query, value, key, attention_mask): each projection a MatMul of
// the kernel flattened to (features, heads·size) and an Add of the bias,
// the heads split by Reshape and Transpose, the scores a batched MatMul of
// the scaled queries and the keys, the masked scores −1e9 (Where), a
// Softmax over the keys, and the output projection a MatMul of the heads'
// results side by side.
func (e *exporter) attention(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		NumHeads      int  `json:"num_heads"`
		KeyDim        int  `json:"key_dim"`
		ValueDim      int  `json:"value_dim"`
		UseBias       bool `json:"use_bias"`
		OutputShape   *int `json:"output_shape"`
		UseCausalMask bool `json:"use_causal_mask"`
	}
	if err := l.decode(&c); err != nil {
		return nil, err
	}
	if len(in) < 2 || len(in) > 4 {
		return nil, l.cannot("it takes %d inputs, want 2 to 4 (query, value, key, attention_mask)", len(in))
	}
	query, value := in[0], in[1]
	key := value
	if len(in) > 2 {
		key = in[2]
	}
	for _, v := range []*expValue{query, value, key} {
		if len(v.shape) != 2 {
			return nil, l.cannot("its inputs %v are not (steps, features)", v.shape)
		}
	}
	T, S := query.shape[0], value.shape[0]
	if key.shape[0] != S {
		return nil, l.cannot("the key %v and the value %v differ in steps", key.shape, value.shape)
	}
	H, K, V := c.NumHeads, c.KeyDim, c.ValueDim
	if H < 1 || K < 1 || V < 1 {
		return nil, l.cannot("num_heads %d, key_dim %d and value_dim %d must be positive", H, K, V)
	}
	O := query.shape[1]
	if c.OutputShape != nil {
		O = *c.OutputShape
	}
	// project gives x·kernel + bias as (N, heads, steps, size), or with
	// keys last (N, heads, size, steps) for the keys.
	project := func(x *expValue, name string, size int, keysLast bool) (string, error) {
		d := x.shape[1]
		k, err := e.weightOf(l, name+"/kernel", d, H, size)
		if err != nil {
			return "", err
		}
		y := e.node("MatMul", []string{e.get(x, false), e.initWeight(l.name+"/"+name+"/kernel", []int{d, H * size}, k)}, ref+"/"+name+"_matmul")
		if c.UseBias {
			b, err := e.weightOf(l, name+"/bias", H, size)
			if err != nil {
				return "", err
			}
			y = e.node("Add", []string{y, e.initWeight(l.name+"/"+name+"/bias", []int{H * size}, b)}, ref+"/"+name+"_projected")
		}
		y = e.node("Reshape", []string{y, e.ints(l.name+"/"+name+"_heads", 0, 0, int64(H), int64(size))}, ref+"/"+name+"_heads")
		if name == "query" {
			y = e.node("Mul", []string{y, e.scalar(l.name+"/scale", 1/math.Sqrt(float64(K)))}, ref+"/query_scaled")
		}
		perm := []int{0, 2, 1, 3}
		if keysLast {
			perm = []int{0, 2, 3, 1}
		}
		return e.node("Transpose", []string{y}, ref+"/"+name+"_by_head", attrInts("perm", perm)), nil
	}
	q, err := project(query, "query", K, false)
	if err != nil {
		return nil, err
	}
	k, err := project(key, "key", K, true)
	if err != nil {
		return nil, err
	}
	v, err := project(value, "value", V, false)
	if err != nil {
		return nil, err
	}
	scores := e.node("MatMul", []string{q, k}, ref+"/scores") // (N, H, T, S)
	keep := ""
	if len(in) == 4 {
		mask := in[3]
		if !equalInts(mask.shape, []int{T, S}) {
			return nil, l.cannot("the attention mask %v is not (query steps, key steps) = [%d %d]", mask.shape, T, S)
		}
		m := e.node("Greater", []string{e.get(mask, false), e.scalar(l.name+"/half", 0.5)}, ref+"/attend")
		keep = e.unsqueeze(m, 1, ref+"/attend_all_heads")
	}
	if c.UseCausalMask {
		causal := make([]bool, T*S)
		for i := range T {
			for j := range S {
				causal[i*S+j] = j <= i
			}
		}
		cm := e.initBool(l.name+"/causal_mask", []int{T, S}, causal)
		if keep == "" {
			keep = cm
		} else {
			keep = e.node("And", []string{keep, cm}, ref+"/attend_causal")
		}
	}
	if keep != "" {
		scores = e.node("Where", []string{keep, scores, e.scalar(l.name+"/masked_score", -1e9)}, ref+"/masked_scores")
	}
	p := e.node("Softmax", []string{scores}, ref+"/probabilities", attrInt("axis", -1))
	y := e.node("MatMul", []string{p, v}, ref+"/attended") // (N, H, T, V)
	y = e.node("Transpose", []string{y}, ref+"/attended_by_step", attrInts("perm", []int{0, 2, 1, 3}))
	y = e.node("Reshape", []string{y, e.ints(l.name+"/heads_joined", 0, 0, int64(H*V))}, ref+"/heads_joined")
	wo, err := e.weightOf(l, "attention_output/kernel", H, V, O)
	if err != nil {
		return nil, err
	}
	out := ref
	if c.UseBias {
		out = ref + "/output_matmul"
	}
	y = e.node("MatMul", []string{y, e.initWeight(l.name+"/attention_output/kernel", []int{H * V, O}, wo)}, out)
	if c.UseBias {
		bo, err := e.weightOf(l, "attention_output/bias", O)
		if err != nil {
			return nil, err
		}
		y = e.node("Add", []string{y, e.initWeight(l.name+"/attention_output/bias", []int{O}, bo)}, ref)
	}
	return withName([]int{T, O}, y, false), nil
}

// positionEmbedding exports PositionEmbedding: the first steps rows of its
// table (a Slice of the initializer), expanded to the input's shape.
func (e *exporter) positionEmbedding(l *expLayer, in []*expValue, ref string) (*expValue, error) {
	var c struct {
		SequenceLength int `json:"sequence_length"`
	}
	x, err := l.single(in, &c)
	if err != nil {
		return nil, err
	}
	if len(x.shape) != 2 {
		return nil, l.cannot("its input %v is not (steps, features)", x.shape)
	}
	steps, F := x.shape[0], x.shape[1]
	if steps > c.SequenceLength {
		return nil, l.cannot("the input has %d steps, more than the sequence length %d", steps, c.SequenceLength)
	}
	table, err := e.weightOf(l, "embeddings", c.SequenceLength, F)
	if err != nil {
		return nil, err
	}
	t := e.initWeight(l.name+"/embeddings", []int{c.SequenceLength, F}, table)
	if steps < c.SequenceLength {
		t = e.node("Slice", []string{t, e.ints(l.name+"/starts", 0), e.ints(l.name+"/ends", int64(steps)), e.ints(l.name+"/axes", 0)}, ref+"/rows")
	}
	shape := e.node("Shape", []string{e.get(x, false)}, ref+"/input_shape")
	return withName(x.shape, e.node("Expand", []string{t, shape}, ref), false), nil
}
