// Package data reads the image-classification data sets that Tartan trains on
// and turns them into batches for a model.
//
// It works in four phases:
//
//   - Reading: ReadIDX and ReadIDXFile parse the IDX format of MNIST and
//     Fashion-MNIST, gzip-compressed or not, and reject damaged files with
//     errors that say what is wrong (ErrTruncated, ErrBadMagic,
//     ErrPayloadSize, ErrTrailingData, ErrBadGzip).
//   - Locating: FashionMNIST, MNIST and CIFAR10 look for their files in the
//     directory given by the Dir option (the command line's --data), then in
//     the directory named by the TARTAN_DATA environment variable, then in the
//     Keras cache (~/.keras/datasets), then where a system package installs
//     them (Debian's dataset-fashion-mnist puts Fashion-MNIST in
//     /usr/share/datasets/fashion-mnist). Files that are found but do not fit
//     the data set (wrong image size, label counts that differ, labels that
//     are not classes) are reported with ErrBadContent, naming the file.
//   - Downloading: when no copy is found, the canonical files are fetched
//     into the Keras cache, each checked for its exact size and SHA-256 before
//     it is renamed into place. Offline, the loaders fail with ErrNotFound and
//     a message that says how to get the data.
//   - Batching: a Dataset keeps its images as compact uint8 pixels in
//     channels-last (N, H, W, C) order; Batch scales a chosen set of samples to
//     float32 in [0, 1] in a buffer the caller owns, and Slice, Subset and Split
//     cut a data set without copying, Split taking its validation part from the
//     end as Keras's validation_split does.
//
// Every loader returns the Keras load_data() split: the training set and the
// test set, in file order.
package data
