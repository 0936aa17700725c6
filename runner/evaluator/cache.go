package evaluator

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// DefaultCacheSize is the number of verdicts Cached keeps when given no size.
const DefaultCacheSize = 1024

// Cached wraps an Evaluator and remembers its verdicts, least recently used out
// first. The key is the SHA-256 of the contract hash, the evaluate criteria and the
// SHA-256 of the output: the same output judged under the same contract gets the same
// verdict without another call (a revision that changes nothing is not re-billed).
// Errors are never cached, so an outage does not outlive itself. Safe for concurrent
// use; concurrent misses on one key may each call the inner evaluator.
type Cached struct {
	inner Evaluator
	size  int

	mu      sync.Mutex
	order   *list.List // of *cacheEntry, most recent at the front
	entries map[[32]byte]*list.Element
	hits    uint64
	misses  uint64
}

type cacheEntry struct {
	key     [32]byte
	verdict Verdict
}

// NewCached returns inner with a cache of size verdicts (DefaultCacheSize when <= 0).
func NewCached(inner Evaluator, size int) *Cached {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cached{inner: inner, size: size, order: list.New(), entries: map[[32]byte]*list.Element{}}
}

// CacheKey is the key Cached files r's verdict under.
func CacheKey(r Request) [32]byte {
	out := sha256.Sum256(r.Output)
	h := sha256.New()
	// Length-prefixed, so that no two different (hash, criteria) pairs collide.
	for _, part := range [][]byte{[]byte(r.ContractHash), []byte(r.Evaluate), out[:]} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// Evaluate returns the cached verdict for r or asks the inner evaluator and caches
// its verdict (not its error). A verdict from the cache has no Usage: nothing was
// spent on it, and the call that was is already counted where it was made. On a
// miss the inner evaluator's Usage is returned, with its error too.
func (c *Cached) Evaluate(ctx context.Context, r Request) (Verdict, error) {
	key := CacheKey(r)
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		c.hits++
		v := el.Value.(*cacheEntry).verdict
		c.mu.Unlock()
		return v, nil
	}
	c.misses++
	c.mu.Unlock()

	v, err := c.inner.Evaluate(ctx, r)
	if err != nil {
		return Verdict{Usage: v.Usage}, err
	}
	// The cache keeps the judgement only, so no hit can charge the usage again.
	kept := v
	kept.Usage = nil

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok { // filled meanwhile by a concurrent miss
		el.Value.(*cacheEntry).verdict = kept
		c.order.MoveToFront(el)
		return v, nil
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, verdict: kept})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
	return v, nil
}

// Len returns the number of cached verdicts.
func (c *Cached) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Stats returns how many calls were answered from the cache and how many were not.
func (c *Cached) Stats() (hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}
