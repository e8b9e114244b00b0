package data

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The four files of an MNIST-style data set, as its publishers name them.
const (
	trainImagesIDX = "train-images-idx3-ubyte.gz"
	trainLabelsIDX = "train-labels-idx1-ubyte.gz"
	testImagesIDX  = "t10k-images-idx3-ubyte.gz"
	testLabelsIDX  = "t10k-labels-idx1-ubyte.gz"
)

// idxLayout is the file set of an MNIST-style data set: each file gzipped
// or, under the name without .gz, uncompressed.
var idxLayout = [][][]string{{
	{trainImagesIDX, strings.TrimSuffix(trainImagesIDX, ".gz")},
	{trainLabelsIDX, strings.TrimSuffix(trainLabelsIDX, ".gz")},
	{testImagesIDX, strings.TrimSuffix(testImagesIDX, ".gz")},
	{testLabelsIDX, strings.TrimSuffix(testLabelsIDX, ".gz")},
}}

// fashionClassNames are Fashion-MNIST's classes, by label.
var fashionClassNames = []string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// digitClassNames are MNIST's classes, by label.
var digitClassNames = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// fashionMNIST is Zalando's Fashion-MNIST. The sizes and digests are those of
// the files Zalando publishes (whose MD5s its README lists) and Keras mirrors.
// Debian's dataset-fashion-mnist package holds the same compressed data under
// different gzip headers (no file name, another time stamp), so its files are
// 23 or 24 bytes shorter and have other digests; digests are checked only on
// downloads, never on copies found on disk.
var fashionMNIST = &source{
	title:      "Fashion-MNIST",
	dirNames:   []string{"fashion-mnist", "fashion_mnist", "fashion"},
	cacheDirs:  []string{"fashion-mnist"},
	fetchDir:   "fashion-mnist",
	systemDir:  "fashion-mnist",
	aptPackage: "dataset-fashion-mnist",
	layouts:    idxLayout,
	mirrors: []string{
		"https://storage.googleapis.com/tensorflow/tf-keras-datasets/",
		"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
	},
	remote: []remoteFile{
		{trainImagesIDX, 26421880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"},
		{trainLabelsIDX, 29515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"},
		{testImagesIDX, 4422102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"},
		{testLabelsIDX, 5148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"},
	},
	read: func(files map[string]string) (*Dataset, *Dataset, error) {
		return readIDXSplit("fashion-mnist", files, 28, 28, fashionClassNames)
	},
}

// mnist is LeCun, Cortes and Burges's MNIST digits. Keras's own mirror has
// them only as a NumPy archive (mnist.npz), so the IDX files come from the
// mirrors that TensorFlow's and PyTorch's loaders use; the sizes and digests
// are those of the original files.
var mnist = &source{
	title:     "MNIST",
	dirNames:  []string{"mnist", "MNIST"},
	cacheDirs: []string{"mnist"},
	fetchDir:  "mnist",
	layouts:   idxLayout,
	mirrors: []string{
		"https://storage.googleapis.com/cvdf-datasets/mnist/",
		"https://ossci-datasets.s3.amazonaws.com/mnist/",
	},
	remote: []remoteFile{
		{trainImagesIDX, 9912422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
		{trainLabelsIDX, 28881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
		{testImagesIDX, 1648877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
		{testLabelsIDX, 4542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
	},
	read: func(files map[string]string) (*Dataset, *Dataset, error) {
		return readIDXSplit("mnist", files, 28, 28, digitClassNames)
	},
}

// FashionMNIST loads Zalando's Fashion-MNIST as Keras's load_data() does: a
// training set of 60,000 and a test set of 10,000 grey 28×28×1 images of 10
// kinds of clothing; each set's ClassNames field names them, from
// "T-shirt/top" for label 0 to "Ankle boot" for label 9. See the package
// documentation for where it looks for the files.
func FashionMNIST(opts ...Option) (train, test *Dataset, err error) {
	return fashionMNIST.load(opts)
}

// MNIST loads the MNIST handwritten digits as Keras's load_data() does: a
// training set of 60,000 and a test set of 10,000 grey 28×28×1 images of the
// digits 0 to 9. It reads the four IDX files, not Keras's mnist.npz.
func MNIST(opts ...Option) (train, test *Dataset, err error) {
	return mnist.load(opts)
}

// The sizes of the published MNIST-style splits. A file that declares more
// samples is not a copy of the data set, and is rejected before its payload
// is read.
const (
	idxTrainSamples = 60000
	idxTestSamples  = 10000
)

// readIDXSplit reads the training and test sets of an MNIST-style data set
// whose images are h×w.
func readIDXSplit(name string, files map[string]string, h, w int, classes []string) (train, test *Dataset, err error) {
	train, err = readIDXPair(name+"/train", files[trainImagesIDX], files[trainLabelsIDX], h, w, idxTrainSamples, classes)
	if err != nil {
		return nil, nil, err
	}
	test, err = readIDXPair(name+"/test", files[testImagesIDX], files[testLabelsIDX], h, w, idxTestSamples, classes)
	if err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// openIDXFile opens the IDX file at path and reads its header; the caller
// closes the returned file once it has read the payload.
func openIDXFile(path string) (*idxFile, io.Closer, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	x, err := openIDX(f, path, size)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return x, f, nil
}

// readIDXPair reads an image file of at most maxN h×w uint8 images and its
// label file, and checks that they belong together. Both headers are checked
// against each other and against the data set before any payload is read,
// so a header that overstates its file's size costs no memory.
func readIDXPair(name, imagesPath, labelsPath string, h, w, maxN int, classes []string) (*Dataset, error) {
	images, imagesFile, err := openIDXFile(imagesPath)
	if err != nil {
		return nil, err
	}
	defer imagesFile.Close()
	if images.typ != Uint8 || len(images.dims) != 3 || images.dims[1] != h || images.dims[2] != w {
		return nil, fmt.Errorf("data: %s: %w: it holds a %s array of %s, but %s images are a uint8 array of N×%d×%d%s",
			imagesPath, ErrBadContent, fmtDims(images.dims), images.typ, name, h, w, looksLike(images, 1, "a label file"))
	}
	if images.dims[0] > maxN {
		return nil, fmt.Errorf("data: %s: %w: its header declares %d images (%d bytes), but %s has %d samples: the file is damaged or not part of the data set",
			imagesPath, ErrBadContent, images.dims[0], images.need, name, maxN)
	}
	labels, labelsFile, err := openIDXFile(labelsPath)
	if err != nil {
		return nil, err
	}
	defer labelsFile.Close()
	if labels.typ != Uint8 || len(labels.dims) != 1 {
		return nil, fmt.Errorf("data: %s: %w: it holds a %s array of %s, but %s labels are a uint8 array of N%s",
			labelsPath, ErrBadContent, fmtDims(labels.dims), labels.typ, name, looksLike(labels, 3, "an image file"))
	}
	if images.dims[0] != labels.dims[0] {
		return nil, fmt.Errorf("data: %s: %w: it holds %d labels, but %s holds %d images",
			labelsPath, ErrBadContent, labels.dims[0], filepath.Base(imagesPath), images.dims[0])
	}
	labelData, err := labels.payload()
	if err != nil {
		return nil, err
	}
	if i := firstBadLabel(labelData, len(classes)); i >= 0 {
		return nil, fmt.Errorf("data: %s: %w: label %d of sample %d is not a class of %s (0 to %d)",
			labelsPath, ErrBadContent, labelData[i], i, name, len(classes)-1)
	}
	imageData, err := images.payload()
	if err != nil {
		return nil, err
	}
	d := &Dataset{
		Name:   name,
		Images: imageData,
		Labels: labelData,
		N:      images.dims[0], H: h, W: w, C: 1,
		Classes:    len(classes),
		ClassNames: append([]string(nil), classes...),
	}
	return d, d.Validate()
}

// looksLike returns a hint that x looks like what, when it is a uint8
// array of ndims dimensions, and "" otherwise.
func looksLike(x *idxFile, ndims int, what string) string {
	if x.typ == Uint8 && len(x.dims) == ndims {
		return " (it looks like " + what + ")"
	}
	return ""
}
