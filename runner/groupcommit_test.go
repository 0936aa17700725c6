package runner

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// Callers that arrive while a batch runs are served together by the next one, and
// each gets its own batch's error.
func TestGroupCommitBatchesWaitingCallers(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	g := groupCommit[int]{do: func(b []int) error {
		mu.Lock()
		batches = append(batches, slices.Clone(b))
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			<-release // the first batch runs while the others queue up
			return nil
		}
		return errors.New("second batch failed")
	}}
	errs := make([]error, 6)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = g.submit(0) }()
	for !func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 }() {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 6; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.submit(i) }()
	}
	for func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.pending) < 5 }() {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if len(batches) != 2 || !slices.Equal(batches[0], []int{0}) || len(batches[1]) != 5 {
		t.Fatalf("batches = %v, want [0] then the five that waited", batches)
	}
	if errs[0] != nil {
		t.Fatalf("the first caller got %v", errs[0])
	}
	for i := 1; i < 6; i++ {
		if errs[i] == nil {
			t.Fatalf("caller %d did not get its batch's error", i)
		}
	}
	// Alone, a caller runs its own batch.
	if err := g.submit(9); err == nil || len(batches) != 3 || !slices.Equal(batches[2], []int{9}) {
		t.Fatalf("lone submit: err %v, batches %v", err, batches)
	}
}
