package evaluator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/models"
)

// countingEvaluator passes outputs that contain "good" and counts its calls; while
// fail is set it returns an infrastructure error instead.
type countingEvaluator struct {
	calls atomic.Int32
	fail  atomic.Bool
}

func (c *countingEvaluator) Evaluate(_ context.Context, r Request) (Verdict, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return Verdict{}, infra("fake", errors.New("down"))
	}
	return Verdict{Pass: string(r.Output) == "good", Diagnosis: "judged " + string(r.Output)}, nil
}

func TestCachedHits(t *testing.T) {
	inner := &countingEvaluator{}
	c := NewCached(inner, 10)
	r := Request{ContractHash: "h1", Evaluate: "criteria", Output: []byte("good")}
	for i := 0; i < 3; i++ {
		v, err := c.Evaluate(t.Context(), r)
		if err != nil || !v.Pass || v.Diagnosis != "judged good" {
			t.Fatalf("call %d: %+v, %v", i, v, err)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("inner called %d times, want 1", n)
	}
	if hits, misses := c.Stats(); hits != 2 || misses != 1 {
		t.Errorf("stats = %d hits, %d misses", hits, misses)
	}
	// The brief is not part of the key: the contract hash stands for it.
	r2 := r
	r2.Brief = "revision brief with a diagnosis"
	c.Evaluate(t.Context(), r2)
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("a different brief under the same contract missed the cache")
	}
	// Any part of the key changing is a miss.
	for _, changed := range []Request{
		{ContractHash: "h2", Evaluate: "criteria", Output: []byte("good")},
		{ContractHash: "h1", Evaluate: "other criteria", Output: []byte("good")},
		{ContractHash: "h1", Evaluate: "criteria", Output: []byte("bad")},
	} {
		before := inner.calls.Load()
		c.Evaluate(t.Context(), changed)
		if inner.calls.Load() != before+1 {
			t.Errorf("%+v was answered from the cache", changed)
		}
	}
	if CacheKey(Request{ContractHash: "ab", Evaluate: "c"}) == CacheKey(Request{ContractHash: "a", Evaluate: "bc"}) {
		t.Error("cache key is ambiguous")
	}
}

func TestCachedNeverCachesErrors(t *testing.T) {
	inner := &countingEvaluator{}
	c := NewCached(inner, 10)
	r := Request{ContractHash: "h", Evaluate: "e", Output: []byte("good")}
	inner.fail.Store(true)
	if _, err := c.Evaluate(t.Context(), r); !IsInfra(err) {
		t.Fatalf("err = %v", err)
	}
	if c.Len() != 0 {
		t.Error("an error was cached")
	}
	inner.fail.Store(false)
	if v, err := c.Evaluate(t.Context(), r); err != nil || !v.Pass {
		t.Fatalf("after recovery: %+v, %v", v, err)
	}
	if n := inner.calls.Load(); n != 2 {
		t.Errorf("inner called %d times, want 2", n)
	}
}

func TestCachedEvictsLeastRecentlyUsed(t *testing.T) {
	inner := &countingEvaluator{}
	c := NewCached(inner, 2)
	req := func(s string) Request { return Request{ContractHash: "h", Evaluate: "e", Output: []byte(s)} }
	c.Evaluate(t.Context(), req("a"))
	c.Evaluate(t.Context(), req("b"))
	c.Evaluate(t.Context(), req("a")) // a is now the most recent
	c.Evaluate(t.Context(), req("c")) // evicts b
	if c.Len() != 2 {
		t.Errorf("len = %d", c.Len())
	}
	before := inner.calls.Load()
	c.Evaluate(t.Context(), req("a"))
	if inner.calls.Load() != before {
		t.Error("a was evicted")
	}
	c.Evaluate(t.Context(), req("b"))
	if inner.calls.Load() != before+1 {
		t.Error("b was not evicted")
	}
	if NewCached(inner, 0).size != DefaultCacheSize {
		t.Error("default size not applied")
	}
}

func TestCachedConcurrent(t *testing.T) {
	inner := &countingEvaluator{}
	c := NewCached(inner, 16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				out := fmt.Sprintf("out-%d", (g*7+i)%40)
				v, err := c.Evaluate(context.Background(), Request{ContractHash: "h", Evaluate: "e", Output: []byte(out)})
				if err != nil || v.Diagnosis != "judged "+out {
					t.Errorf("got %+v, %v for %s", v, err, out)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Errorf("len %d exceeds the size", c.Len())
	}
	hits, misses := c.Stats()
	if hits+misses != 1600 || int(misses) != int(inner.calls.Load()) {
		t.Errorf("hits %d + misses %d, inner calls %d", hits, misses, inner.calls.Load())
	}
}

// spendingEvaluator passes everything and reports ten input tokens per call.
type spendingEvaluator struct{ calls atomic.Int32 }

func (s *spendingEvaluator) Evaluate(context.Context, Request) (Verdict, error) {
	s.calls.Add(1)
	n := int64(10)
	return Verdict{Pass: true, Diagnosis: "ok", Usage: &models.Usage{InputTokens: &n, Model: "m"}}, nil
}

func TestCachedVerdictHasNoUsage(t *testing.T) {
	inner := &spendingEvaluator{}
	c := NewCached(inner, 10)
	r := Request{ContractHash: "h", Evaluate: "criteria", Output: []byte("out")}
	v, err := c.Evaluate(t.Context(), r)
	if err != nil || v.Usage == nil || *v.Usage.InputTokens != 10 {
		t.Fatalf("miss: %+v, %v; want the inner call's usage", v, err)
	}
	v, err = c.Evaluate(t.Context(), r)
	if err != nil || !v.Pass || v.Usage != nil || inner.calls.Load() != 1 {
		t.Fatalf("hit: %+v, %v, %d calls; a cached verdict spent nothing", v, err, inner.calls.Load())
	}
}

// billedFailure gives no verdict but reports what the failed call spent.
type billedFailure struct{}

func (billedFailure) Evaluate(context.Context, Request) (Verdict, error) {
	n := int64(3)
	return Verdict{Pass: true, Usage: &models.Usage{OutputTokens: &n}}, infra("fake", ErrMalformed)
}

func TestCachedPassesUsageOfFailures(t *testing.T) {
	v, err := NewCached(billedFailure{}, 10).Evaluate(t.Context(), Request{Evaluate: "c"})
	if !IsInfra(err) || v.Pass || v.Usage == nil || *v.Usage.OutputTokens != 3 {
		t.Fatalf("got %+v, %v", v, err)
	}
}
