package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/countersign/countersign/runner/startstop"
)

// Service serves a Gateway over HTTP: on the address it starts with, and on any
// further listener the caller hands it (a unix socket inside a sandbox, say). Its
// start and stop are the shared background-service base's.
type Service struct {
	startstop.Base

	gw   *Gateway
	addr string
	srv  *http.Server

	mu sync.Mutex
	ln net.Listener
	// stopped is set by the first Stop: from then on Start and Serve refuse, also
	// after a Stop without Start.
	stopped bool
	serving sync.WaitGroup
}

// NewService serves gw on addr ("127.0.0.1:0" picks a free port) once started.
func NewService(gw *Gateway, addr string) *Service {
	return &Service{gw: gw, addr: addr, srv: &http.Server{
		Handler: gw,
		// No write timeout: a stream lasts as long as the model writes.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(gw.cfg.Log.Handler(), slog.LevelDebug),
	}}
}

// Start listens on the service's address and serves in the background until Stop
// (not until ctx ends: ctx bounds only the listening). It fails when the address
// cannot be listened on, or when the service was stopped or already started; a
// failure to listen leaves it as it was, so Start may be tried again.
func (s *Service) Start(ctx context.Context) error {
	errStarted := errors.New("gateway: service already started or stopped")
	if s.isStopped() || s.Running() {
		return errStarted
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("gateway: listening on %s: %w", s.addr, err)
	}
	life, ok, started, stopped := s.StartInitOnce(context.WithoutCancel(ctx))
	if !ok {
		_ = ln.Close()
		return errStarted
	}
	s.mu.Lock()
	if s.stopped { // a Stop came first: it found nothing to wait for
		s.mu.Unlock()
		_ = ln.Close()
		stopped()
		return errStarted
	}
	s.ln = ln
	s.serveLocked(ln)
	s.mu.Unlock()
	go func() {
		defer stopped()
		started()
		<-life.Done() // Stop, which shuts the server down
		s.serving.Wait()
	}()
	return nil
}

// isStopped reports whether Stop has been called.
func (s *Service) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Addr is the address the service listens on, "" before Start.
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Serve serves the gateway on ln too, in the background, until Stop, which closes
// ln. A stopped service closes ln at once and returns an error.
func (s *Service) Serve(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		_ = ln.Close()
		return errors.New("gateway: service stopped")
	}
	s.serveLocked(ln)
	return nil
}

func (s *Service) serveLocked(ln net.Listener) {
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.gw.cfg.Log.Error("gateway: serving stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// Stop closes the listeners and waits, until ctx ends, for the calls in flight to
// finish; then it cuts those left (a cut stream is charged its reservation) and
// waits for them to end. Idempotent: later calls return nil at once.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true // no listener is served from here, so serving only goes down
	s.mu.Unlock()
	ok, done, finish := s.StopInit()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	if ok {
		<-done // the serving goroutines ended: Close leaves none behind
		finish(true)
	} else {
		s.serving.Wait() // listeners handed to Serve before any Start
	}
	return err
}
