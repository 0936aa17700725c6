package runner

import (
	"testing"
	"time"
)

// TestBudgetWaitBacksOff: a task waiting for its budget's reservations checks again
// after 250 ms, then twice as long each time, never more than 5 s apart.
func TestBudgetWaitBacksOff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 5: 4 * time.Second, 6: 5 * time.Second, 50: 5 * time.Second} {
		if got := budgetWait(n); got != want {
			t.Errorf("budgetWait(%d) = %s, want %s", n, got, want)
		}
	}
}
