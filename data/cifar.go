package data

import (
	"archive/tar"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
)

// CIFAR-10's binary version: each record is one label byte and a 32×32
// colour image stored as three 1024-byte planes, red, green then blue.
const (
	cifarSide    = 32
	cifarPlane   = cifarSide * cifarSide
	cifarRecord  = 1 + 3*cifarPlane
	cifarArchive = "cifar-10-binary.tar.gz"
)

// cifarTrainFiles and cifarTestFile are the batch files inside the archive,
// in the order Keras concatenates them.
var (
	cifarTrainFiles = []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}
	cifarTestFile   = "test_batch.bin"
)

// cifarClassNames are CIFAR-10's classes, by label.
var cifarClassNames = []string{
	"airplane", "automobile", "bird", "cat", "deer",
	"dog", "frog", "horse", "ship", "truck",
}

// cifar10 is Krizhevsky's CIFAR-10, binary version. It is read either from
// the six extracted batch files or straight from the archive, which is what
// a download leaves in the Keras cache. The size and SHA-256 are those of
// the archive on the Toronto site (whose page lists its MD5,
// c32a1d4ab5d03f1284b67883e8d87530).
var cifar10 = &source{
	title:     "CIFAR-10",
	dirNames:  []string{"cifar-10-batches-bin", "cifar-10", "cifar10"},
	cacheDirs: []string{".", "cifar-10-batches-bin"},
	fetchDir:  ".",
	layouts: [][][]string{
		{{cifarTrainFiles[0]}, {cifarTrainFiles[1]}, {cifarTrainFiles[2]}, {cifarTrainFiles[3]}, {cifarTrainFiles[4]}, {cifarTestFile}},
		{{cifarArchive}},
	},
	mirrors: []string{"https://www.cs.toronto.edu/~kriz/"},
	remote: []remoteFile{
		{cifarArchive, 170052171, "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"},
	},
	read: readCIFAR,
}

// CIFAR10 loads CIFAR-10 as Keras's load_data() does: a training set of
// 50,000 (data_batch_1.bin to data_batch_5.bin, in order) and a test set of
// 10,000 (test_batch.bin) colour 32×32×3 images in 10 classes. The files'
// planar red, green and blue images are turned channels-last. It reads the
// binary version of the data set, extracted or as the cifar-10-binary.tar.gz
// archive.
func CIFAR10(opts ...Option) (train, test *Dataset, err error) {
	return cifar10.load(opts)
}

// readCIFAR reads the batches from the extracted files or the archive that
// files names.
func readCIFAR(files map[string]string) (train, test *Dataset, err error) {
	names := append(append([]string(nil), cifarTrainFiles...), cifarTestFile)
	batches := map[string][]byte{} // contents, by batch name
	where := map[string]string{}   // how errors name each batch
	if archive, ok := files[cifarArchive]; ok {
		if batches, err = readCIFARArchive(archive); err != nil {
			return nil, nil, err
		}
		for _, n := range names {
			where[n] = archive + ": " + n
		}
	} else {
		for _, n := range names {
			b, err := readCIFARBatchFile(files[n])
			if err != nil {
				return nil, nil, err
			}
			batches[n], where[n] = b, files[n]
		}
	}
	if train, err = decodeCIFAR("cifar10/train", cifarTrainFiles, batches, where); err != nil {
		return nil, nil, err
	}
	if test, err = decodeCIFAR("cifar10/test", []string{cifarTestFile}, batches, where); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// decodeCIFAR joins the named batches, in order, into one data set, turning
// each planar image channels-last.
func decodeCIFAR(name string, parts []string, batches map[string][]byte, where map[string]string) (*Dataset, error) {
	n := 0
	for _, p := range parts {
		b := batches[p]
		if len(b) == 0 || len(b)%cifarRecord != 0 {
			return nil, fmt.Errorf("data: %s: %w: its %d bytes are not a whole, non-zero number of %d-byte CIFAR-10 records", where[p], ErrBadContent, len(b), cifarRecord)
		}
		n += len(b) / cifarRecord
	}
	d := &Dataset{
		Name:   name,
		Images: make([]uint8, n*3*cifarPlane),
		Labels: make([]uint8, n),
		N:      n, H: cifarSide, W: cifarSide, C: 3,
		Classes:    len(cifarClassNames),
		ClassNames: append([]string(nil), cifarClassNames...),
	}
	i := 0
	for _, p := range parts {
		b := batches[p]
		for r := 0; r < len(b)/cifarRecord; r++ {
			rec := b[r*cifarRecord : (r+1)*cifarRecord]
			if int(rec[0]) >= d.Classes {
				return nil, fmt.Errorf("data: %s: %w: record %d has label %d, but CIFAR-10's classes are 0 to %d", where[p], ErrBadContent, r, rec[0], d.Classes-1)
			}
			d.Labels[i] = rec[0]
			img := d.Images[i*3*cifarPlane : (i+1)*3*cifarPlane]
			for c := 0; c < 3; c++ {
				plane := rec[1+c*cifarPlane : 1+(c+1)*cifarPlane]
				for px, v := range plane {
					img[3*px+c] = v
				}
			}
			i++
		}
	}
	return d, d.Validate()
}

// cifarBatchRecords is the number of records in each published batch file,
// and maxCIFARBatch the size of such a file, 30,730,000 bytes: a batch file
// may hold fewer records, never more.
const (
	cifarBatchRecords = 10000
	maxCIFARBatch     = cifarBatchRecords * cifarRecord
)

// tooBigBatch is the error for a batch, named by where, of size bytes.
func tooBigBatch(where string, size int64) error {
	return fmt.Errorf("data: %s: %w: it is %d bytes, more than the %d bytes (%d records) of a CIFAR-10 batch",
		where, ErrBadContent, size, maxCIFARBatch, cifarBatchRecords)
}

// readCIFARBatchFile reads the extracted batch file at path, which must be a
// regular file of at most maxCIFARBatch bytes.
func readCIFARBatchFile(path string) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > maxCIFARBatch {
		return nil, tooBigBatch(path, size)
	}
	// Ask for one byte more than the limit, in a first buffer one byte larger
	// than the file: the read ends there unless the file grew meanwhile.
	b, err := readPayload(f, maxCIFARBatch+1, size+1)
	if err == nil {
		return nil, tooBigBatch(path, int64(len(b)))
	}
	if err != io.EOF {
		return nil, fmt.Errorf("data: %s: read: %w", path, err)
	}
	return b, nil
}

// readCIFARArchive reads the six batch files from the gzipped tar archive at
// archive, wherever they lie in it.
func readCIFARArchive(archive string) (map[string][]byte, error) {
	f, _, err := openRegular(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeCIFARArchive(f, archive)
}

// decodeCIFARArchive reads the six batch files from a gzipped tar archive
// read from r; archive names it in errors. Each batch is read as its bytes
// arrive, so an entry that declares more than the archive holds costs
// little memory, and one that declares more than a batch is rejected before
// it is read.
func decodeCIFARArchive(r io.Reader, archive string) (map[string][]byte, error) {
	names := append(append([]string(nil), cifarTrainFiles...), cifarTestFile)
	return decodeTarGz(r, archive, names, maxCIFARBatch, func(entry string, size int64) error {
		return tooBigBatch(archive+": "+entry, size)
	})
}

// decodeTarGz reads the regular files of the given base names from a
// gzipped tar archive read from r, wherever they lie in it; archive names
// it in errors. An entry that declares more than limit bytes is rejected
// before it is read, with tooBig's error; one named twice, a missing one,
// or more than a little padding after the archive's end is an error too.
func decodeTarGz(r io.Reader, archive string, names []string, limit int64, tooBig func(entry string, size int64) error) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, archiveError(archive, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, archiveError(archive, err)
		}
		base := path.Base(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || !want[base] {
			continue
		}
		if hdr.Size > limit {
			return nil, tooBig(hdr.Name, hdr.Size)
		}
		if files[base] != nil {
			return nil, fmt.Errorf("data: %s: %w: the archive holds %s twice", archive, ErrBadContent, base)
		}
		b, err := readPayload(tr, hdr.Size, idxChunk)
		if err != nil {
			return nil, archiveError(archive, err)
		}
		files[base] = b
	}
	// Read to the end of the gzip stream so that its checksum is verified;
	// what follows the tar archive's end is padding, which is short.
	n, err := io.CopyN(io.Discard, zr, maxTrailing+1)
	if n > maxTrailing {
		return nil, fmt.Errorf("data: %s: %w: more than %d bytes follow the end of the tar archive", archive, ErrTrailingData, int64(maxTrailing))
	}
	if err != nil && err != io.EOF {
		return nil, archiveError(archive, err)
	}
	var missing []string
	for _, n := range names {
		if files[n] == nil {
			missing = append(missing, n)
		}
	}
	if missing != nil {
		return nil, fmt.Errorf("data: %s: %w: the archive lacks %v", archive, ErrBadContent, missing)
	}
	return files, nil
}

// archiveError classifies an error met while reading a gzipped tar archive.
func archiveError(archive string, err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("data: %s: %w: the archive is cut off", archive, ErrTruncated)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("data: %s: %w: %v", archive, ErrBadGzip, err)
	case errors.Is(err, tar.ErrHeader):
		return fmt.Errorf("data: %s: %w: corrupt tar archive: %v", archive, ErrBadContent, err)
	}
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) {
		return fmt.Errorf("data: %s: %w: %v", archive, ErrBadGzip, err)
	}
	return fmt.Errorf("data: %s: read: %w", archive, err)
}
