// Package bench is Tartan's benchmark suite of model families: one training
// step (forward pass, loss, gradients and an Adam update, compiled whole into
// one program) of each of
//
//   - mlp: 784 → 1024 → 1024 → 10 with ReLU, batch 256;
//   - cnn: the showcase Fashion-MNIST CNN (nn.FashionCNN), batch 64;
//   - resnet20: ResNet-20 for 32×32×3 images, batch 128;
//   - mobilenetv2: MobileNetV2 (width 1.0) adapted to 32×32×3, batch 128;
//   - transformer: a 2-layer transformer encoder written in the tile and op
//     layers, batch 32 of 128 steps of width 256;
//   - stem: a 3×3 convolution, a 3×3 stride-2 `same` max-pool and a dense
//     classifier, batch 64 of 32×32×3;
//
// and of smaller kernel fragments (a MobileNet block, a network stem,
// attention, an LSTM cell over 16 steps (a recurrence), one depthwise layer,
// an embedding, batch norm with ReLU6). Entries lists them with their sizes;
// bench/README.md describes each one and bench/torch_suite.py builds the
// same models in PyTorch so that both are measured on one machine.
//
// The models of package nn (mlp, cnn, resnet20, mobilenetv2, stem) train
// through Model.Fit, one batch per call, exactly as a user's training does:
// the batch is bound from host memory every step. The transformer and the
// fragments are tile graphs whose training step this package builds itself:
// grad.Grad of the loss and Keras's Adam written with Graph.Update. The
// transformer binds its batch every step; the fragments bind their inputs
// once, so that they measure kernels only.
//
// Every loss is the mean over the batch: sparse categorical cross-entropy
// from logits for the models and the embedding fragment, and the mean of
// the squared output for the other fragments. Data are synthetic and
// seeded. Measure times an entry's steps after a warm-up, within a budget
// of steps and seconds, and reports the median; Compare prints a table of
// ratios against a peer's report, such as one written by torch_suite.py.
package bench
