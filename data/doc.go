// Package data reads the image-classification data sets that Tartan trains on
// (and Keras's IMDB reviews, as Sequences of word indices) and turns them
// into batches for a model.
//
// It works in four phases:
//
//   - Reading: ReadIDX and ReadIDXFile parse the IDX format of MNIST and
//     Fashion-MNIST, gzip-compressed or not, and reject damaged files with
//     errors that say what is wrong (ErrTruncated, ErrBadMagic,
//     ErrPayloadSize, ErrTrailingData, ErrBadGzip) and give the sizes
//     involved. Memory grows only as payload bytes arrive, never to what a
//     header merely declares; a file's size is checked against its header
//     before the payload is read, and only a bounded amount of anything
//     after the payload is read before it is reported. CIFAR-100's python
//     version and IMDB's NumPy archive hold Python pickles, which a reader
//     of just the subset they use decodes, running no code and checking
//     every length against the bytes there are.
//   - Locating: FashionMNIST, MNIST, CIFAR10, CIFAR100 and IMDB look for their files in the
//     directory given by the Dir option (the command line's --data), else in
//     the directory named by the TARTAN_DATA environment variable, else in
//     the Keras cache (~/.keras/datasets), then where a system package
//     installs them (Debian's dataset-fashion-mnist puts Fashion-MNIST in
//     /usr/share/datasets/fashion-mnist). A directory given by Dir or
//     TARTAN_DATA is the only place searched: one that does not exist or
//     lacks the files is an error naming the setting and saying why, never a
//     reason to use another copy. A path that is there but cannot be read as
//     a file (a directory, a named pipe, a device, a link that dangles or
//     loops, a file that cannot be opened) is reported with ErrUnusable,
//     naming it, and never taken for a missing file. Files that are found
//     but do not fit the data set (wrong image size, label counts that
//     differ, more samples than the published data set has, labels that are
//     not classes) are reported with ErrBadContent, naming the file; the
//     headers of an image file and its label file are checked against each
//     other and against the data set before either payload is read.
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
