//go:build race

package nn

// raceDetector says whether the tests run under the race detector, which
// makes long training runs several times slower.
const raceDetector = true
