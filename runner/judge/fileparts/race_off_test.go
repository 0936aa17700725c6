//go:build !race

package fileparts

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
