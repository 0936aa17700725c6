package startstop

import (
	"context"
	"errors"
	"testing"
	"time"
)

// svc is the smallest service on Base: it runs until stopped and counts its runs.
type svc struct {
	Base
	once  bool
	runs  int
	cause error
}

func (s *svc) Start(ctx context.Context) error {
	init := s.StartInit
	if s.once {
		init = s.StartInitOnce
	}
	ctx, ok, started, stopped := init(ctx)
	if !ok {
		return errors.New("not started")
	}
	s.runs++
	go func() {
		defer stopped()
		started()
		<-ctx.Done()
		s.cause = context.Cause(ctx)
	}()
	return nil
}

// TestBase: Stop without Start does nothing, a second Start while running is refused,
// Stop ends the work with ErrStop and twice does no harm, and a restartable service
// starts again.
func TestBase(t *testing.T) {
	ctx := context.Background()
	var s svc
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	started := s.Started() // before Start: the channel Start closes
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	if !s.Running() {
		t.Fatal("not running after Start")
	}
	if err := s.Start(ctx); err == nil {
		t.Fatal("started twice")
	}
	for range 2 {
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s.Running() || !errors.Is(s.cause, ErrStop) {
		t.Fatalf("running %v, cause %v", s.Running(), s.cause)
	}
	if err := s.Start(ctx); err != nil || s.runs != 2 {
		t.Fatalf("restart: %v, runs %d", err, s.runs)
	}
	_ = s.Stop(ctx)
}

// TestOnce: a service started with StartInitOnce never starts again.
func TestOnce(t *testing.T) {
	s := svc{once: true}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Stop(ctx)
	if err := s.Start(ctx); err == nil {
		t.Fatal("a once service started again")
	}
}

// slow ends its work only when released, so that Stop's ctx can end first.
type slow struct {
	Base
	release chan struct{}
}

func (s *slow) Start(ctx context.Context) error {
	_, ok, _, stopped := s.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer stopped()
		<-s.release
	}()
	return nil
}

// TestStopTimeout: a Stop whose ctx ends first reports it, and a later Stop waits
// again until the work ends.
func TestStopTimeout(t *testing.T) {
	s := &slow{release: make(chan struct{})}
	_ = s.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v", err)
	}
	if !s.Running() {
		t.Fatal("stopped before its work ended")
	}
	close(s.release)
	if err := s.Stop(context.Background()); err != nil || s.Running() {
		t.Fatalf("Stop = %v, running %v", err, s.Running())
	}
}

// order records the order services stop in.
type order struct {
	name string
	log  *[]string
}

func (o order) Start(context.Context) error { return nil }
func (o order) Stop(context.Context) error {
	*o.log = append(*o.log, o.name)
	return nil
}

// TestStopAll: services stop in the reverse of their start order.
func TestStopAll(t *testing.T) {
	var log []string
	_ = StopAll(context.Background(), order{"a", &log}, order{"b", &log}, order{"c", &log})
	if got := len(log); got != 3 || log[0] != "c" || log[2] != "a" {
		t.Fatalf("stopped in %v", log)
	}
}
