// Package nn is Tartan's Keras-style training API: layers, Sequential and
// functional models, optimizers, losses, metrics and callbacks, and Fit,
// Evaluate and Predict running on any backend.Device.
//
// A model goes through four phases:
//
//   - Building. Layer constructors (Dense, Conv2D, MaxPooling2D, Dropout, …)
//     take Keras's positional arguments and typed options (Padding,
//     Activation, Strides, …). Sequential chains layers after an Input;
//     Functional connects Nodes made by Input and Apply. Building checks
//     every shape, names the layers as Keras does (conv2d, conv2d_1, dense,
//     …) and draws the initial weights (glorot-uniform kernels, zero biases,
//     channels-last layouts) from a seed, 0 unless InitWeights says otherwise.
//     Layers of several inputs (Add, Concatenate, MultiHeadAttention) take
//     them through Apply; MultiHeadAttention and PositionEmbedding build
//     transformer encoders, as FashionViT shows.
//   - Compiling. Compile attaches an Optimizer (SGD, Adam, AdamW, RMSprop,
//     Adagrad, Nadam, Adamax, Lion, optionally with a learning-rate Schedule
//     and gradient clipping), a Loss and Metrics, and
//     chooses the Device with OnDevice. A model of several outputs takes one
//     loss for all of them, one per output (Losses, or OutputLoss by the
//     output's name, its layer's), LossWeights (the total loss is
//     Σ wₖ·lossₖ), and metrics for all outputs (Metrics) or for one
//     (OutputMetrics). A device comes from device.Select
//     (its argument, such as a --device flag's value, then $TARTAN_DEVICE,
//     then the device `tartan setup` saved, then the best one available),
//     from device.Open for a known id, or from a backend's constructor such
//     as cpu.New().
//   - Running. Fit, Evaluate and Predict turn the model into tile graphs and
//     compile each once per distinct batch size, all of them before the
//     first step, saying so unless Verbose(0) ("Compiling the training step
//     for cpu… done in 1.2 s"); they then print Keras's progress bar (see
//     Verbose), cut to the terminal's width. A training step is one
//     executable: the forward pass, the loss, its gradient (grad.Grad) with
//     respect to every trainable weight, the optimizer's update of weights
//     and slots, the metric accumulators (loss × samples, correct samples,
//     samples) and the step counter, all applied through Graph.Update. The
//     dropout seed is derived from the step counter, so every step draws a
//     new mask and a run is reproducible from its seed. Weights and optimizer
//     state stay on the device between steps; the host reads the metric
//     accumulators only for the progress bar, a few times a second, and at
//     the end of every epoch. Training and inference are separate graphs, so
//     Dropout, BatchNormalization and the random augmentation layers
//     (RandomFlip, RandomContrast, RandomCrop, RandomTranslation, which
//     draw from the same seed)
//     behave as Keras's do in each mode. TrainOnBatch, TestOnBatch and
//     PredictOnBatch run one such step on a batch given as Arrays, as
//     Keras's *_on_batch methods do. Data comes as Samples (FromArrays,
//     FromDataset) for a model of one input and one output, or as
//     MultiSamples (FromArrayLists: one array per input and per output) for
//     any model; PredictMulti and the *OnBatchMulti methods return or take
//     one Array per output. A model of several outputs logs its total loss
//     as "loss", each output's weighted loss as "<output>_loss" and its
//     metrics as "<output>_<metric>", as Keras does.
//   - Saving. GetWeights and SetWeights exchange every weight's value in
//     Keras's order; SaveWeights and LoadWeights exchange weights as
//     safetensors files; Save and Load keep a whole model (its architecture as JSON in the
//     safetensors metadata, and its weights) in one file; SaveCheckpoint and
//     LoadCheckpoint also keep the optimizer state, the step counter, the
//     seed, the epoch and the history, so a killed run resumes where its last
//     checkpoint left it. Every file is written to a temporary name in its
//     directory, synced and renamed, so a crash never leaves a partial file
//     under the real name; a symbolic link is written through to its
//     target, and the next save removes what a save killed mid-write left.
//     Files carry a checksum of every tensor and of the metadata, verified
//     on load, and a load rejects non-finite weights and negative second
//     moments. WriteSafetensors describes the checksums.
//
// Everything a model computes is a tile graph, and the package's extension
// points hand that graph to code of your own. A layer implements LayerDef
// (Build declares weights through LayerBuilder.AddWeight and returns the
// output shape; Call builds the output on CallContext.Graph) and becomes a
// Layer through Custom; RegisterLayer lets Load rebuild it, as Keras's
// custom_objects does. Lambda wraps a function without weights;
// CustomLoss, CustomMetric and CustomOptimizer (with an OptimizerDef) do
// the same for losses, metrics and optimizers. Gradients come from package
// grad, so code written with tile.ParseContraction or package op trains in
// the compiled step like the built-ins, on every backend.
//
// Recurrent layers read inputs of shape (batch, time, features): SimpleRNN,
// LSTM and GRU (Keras's semantics, defaults, weight layouts and names,
// GRU's reset_after included) and Bidirectional around one of them, with
// ReturnSequences, GoBackwards, DropoutRate and RecurrentDropout (one mask
// per sequence, in training only). Each runs its cell as a tile recurrence
// (tile.Graph.Recurrence), not unrolled: the input projection of every
// step is computed at once, and the graph does not grow with the number of
// steps. Masking, and Embedding with MaskZero, mask padded steps: the layer
// records a step mask (batch, time) beside its output in the graph being
// built; Dropout, Activation, ReLU, Dense and LayerNormalization pass it
// on, other layers drop it, and a recurrent layer reading it carries its
// state over the masked steps unchanged, its sequence output repeating the
// output before them (zeros under Bidirectional), as Keras does. With
// ReturnState a call also gives the final states, Keras's return_state:
// ApplyAll returns [output, h] (SimpleRNN, GRU), [output, h, c] (LSTM) or,
// for Bidirectional, the output then the forward and the backward layer's
// states, each (batch, units), taken after the last step read (the first
// step with GoBackwards; on masked sequences each one's last unmasked
// step). Apply returns the first output alone. The call's recurrence is
// computed once for all its outputs. Such layers belong in functional
// models (a Sequential model refuses them), whose architecture records
// which output of a call each node takes ("lstm:0:2" for c, as Keras's
// inbound node [lstm, 0, 2]).
//
// Building checks sizes before allocating: every shape must fit in
// tile.MaxBytes without overflowing, and the weights (4 bytes a parameter)
// in the machine's memory. Fit, Evaluate and Predict clamp the batch size
// to the number of samples, as Keras does.
//
// Errors are returned, never panicked: a constructor given bad arguments
// returns a layer, optimizer or callback that carries the error, and the
// model constructor, Compile or Fit that receives it reports it, naming the
// layer or option at fault. The package's errors say "nn: " once, however
// deep their causes: a Sequential model, for one, names a layer's error by
// position, class and name,
//
//	nn: Sequential "m": layer 1 of 3 (Conv2D "conv2d"): filters 0 must be positive
//
// and the error unwraps to its cause.
//
// The showcase models of the command line, FashionCNN, FashionMLP,
// FashionLSTM and FashionViT, live here so that tests and the tartan command share them.
package nn
