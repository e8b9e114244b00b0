package nn

import (
	"testing"
)

// TestSummary compares the showcase model's summary with Keras 3's table
// for it, written out in full.
func TestSummary(t *testing.T) {
	want := `Model: "fashion_cnn"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                 │ (None, 28, 28, 64)     │           320 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ max_pooling2d (MaxPooling2D)    │ (None, 14, 14, 64)     │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout (Dropout)               │ (None, 14, 14, 64)     │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ conv2d_1 (Conv2D)               │ (None, 14, 14, 32)     │         8,224 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ max_pooling2d_1 (MaxPooling2D)  │ (None, 7, 7, 32)       │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout_1 (Dropout)             │ (None, 7, 7, 32)       │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ (None, 1568)           │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 256)            │       401,664 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout_2 (Dropout)             │ (None, 256)            │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense_1 (Dense)                 │ (None, 10)             │         2,570 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 412,778 (1.57 MB)
 Trainable params: 412,778 (1.57 MB)
 Non-trainable params: 0 (0.00 B)
`
	if got := must(t)(FashionCNN()).Summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	bn := must(t)(Sequential("bn", Input(4), Dense(3, Trainable(false)), BatchNormalization()))
	total, trainable := bn.CountParams()
	// Dense 4·3 + 3 frozen; batch norm gamma and beta trainable, the
	// moving statistics not: 15 + 12 in all, 6 trainable.
	if total != 27 || trainable != 6 {
		t.Errorf("params %d (%d trainable), want 27 (6)", total, trainable)
	}
}
