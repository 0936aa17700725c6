package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/streamjson"
	"github.com/countersign/countersign/runner/worker"
)

// errBudgetOverrun cancels a run that passed what its attempt reserved.
var errBudgetOverrun = errors.New("the run passed its budget")

// streamsJSON reports whether an agent's command prints Claude Code's stream-json
// (the claude preset does): its stdout is then decoded rather than shown raw.
func streamsJSON(command string) bool {
	return strings.Contains(command, "--output-format stream-json")
}

// jsonStream turns a stream-json run's stdout into what the rest of the attempt
// expects: a readable log (the log file, the live log, the tail the checks read) and,
// at the end, the final result's text as the output, with its usage. While the run
// goes, it stops it (cancel) once the usage its API calls report, priced, passes the
// attempt's reservation.
type jsonStream struct {
	dec     *streamjson.Decoder
	log     *os.File
	mu      sync.Mutex
	tail    []byte
	onLog   func([]byte)
	limit   *float64
	prices  []models.ModelPrice
	cancel  context.CancelCauseFunc
	stopped bool
	priced  streamjson.Usage // the running usage last priced
}

// streamTail bounds the readable tail kept for the checks and the attempt record.
const streamTail = 64 << 10

// startJSONStream wires spec for a stream-json run: stdout to the decoder, the
// readable rendering to the attempt's log file, and stderr to a log of its own.
func (p *attemptRunner) startJSONStream(ctx context.Context, spec *worker.Spec, ar *attemptRun, onLog func([]byte), cancel context.CancelCauseFunc) (*jsonStream, error) {
	f, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, err
	}
	rules, err := p.rules(ctx)
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &jsonStream{log: f, onLog: onLog, limit: ar.reserve.ReserveUSD, prices: prices(rules), cancel: cancel}
	s.dec = streamjson.New(writerFunc(s.rendered))
	spec.Stdout = writerFunc(s.write)
	spec.LogPath += ".stderr"
	return s, nil
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

// rendered keeps a piece of the readable log.
func (s *jsonStream) rendered(b []byte) (int, error) {
	s.mu.Lock()
	s.tail = append(s.tail, b...)
	if over := len(s.tail) - streamTail; over > 0 {
		s.tail = append(s.tail[:0], s.tail[over:]...)
	}
	s.mu.Unlock()
	if s.onLog != nil {
		s.onLog(b)
	}
	return s.log.Write(b)
}

// write decodes stdout and stops the run once its priced usage passes the limit.
func (s *jsonStream) write(b []byte) (int, error) {
	n, err := s.dec.Write(b)
	if run := s.dec.Running(); s.limit != nil && !s.stopped && run != s.priced {
		s.priced = run // price only what changed: most chunks add no API call
		u := runningUsage(run)
		u.PriceWith(s.prices)
		if u.CostUSD != nil && *u.CostUSD > *s.limit {
			s.stopped = true
			s.cancel(fmt.Errorf("%w: %s spent of %s reserved", errBudgetOverrun, contract.USD(*u.CostUSD), contract.USD(*s.limit)))
		}
	}
	return n, err
}

// finish closes the stream after the run and gives the attempt its output (the
// readable tail, then the final result's text, which the checks read) and usage.
func (s *jsonStream) finish(ar *attemptRun) {
	s.dec.Close()
	s.log.Close()
	final, ok := s.dec.Result()
	var out bytes.Buffer
	s.mu.Lock()
	out.Write(s.tail)
	s.mu.Unlock()
	if len(ar.res.Tail) > 0 {
		out.WriteString("\n[stderr]\n")
		out.Write(ar.res.Tail)
	}
	if ok {
		out.WriteString("\n")
		out.WriteString(final.Text)
		ar.result = final.Text
		ar.usage = finalUsage(final, s.dec.Running())
	} else if run := s.dec.Running(); run.Calls > 0 {
		// Stopped before its result (a budget, a timeout): what its API calls reported
		// is what it used, priced with the rest.
		ar.usage = runningUsage(run)
		ar.usage.Note = "the run ended before its result: tokens as its API calls reported them"
	}
	ar.res.Tail = out.Bytes()
}

// finalUsage is the usage a stream's final result reports. A count the API calls on
// the way reported higher wins: a run the CLI stopped on its own budget reports its
// cost but zero tokens.
func finalUsage(f streamjson.Final, run streamjson.Usage) *models.Usage {
	most := func(final *int64, seen int64) *int64 {
		if seen > 0 && (final == nil || *final < seen) {
			return &seen
		}
		return final
	}
	u := &models.Usage{InputTokens: most(f.InputTokens, run.InputTokens), OutputTokens: most(f.OutputTokens, run.OutputTokens),
		CacheReadTokens: most(f.CacheReadTokens, run.CacheReadTokens), CacheWriteTokens: most(f.CacheWriteTokens, run.CacheWriteTokens),
		CostUSD: f.CostUSD, Turns: f.Turns, Model: f.Model, SessionID: f.SessionID}
	if u.CostUSD != nil {
		u.CostSource = models.CostReported
	}
	return u
}

// runningUsage is what a stream's API calls reported so far.
func runningUsage(run streamjson.Usage) *models.Usage {
	return &models.Usage{Model: run.Model, InputTokens: &run.InputTokens, OutputTokens: &run.OutputTokens,
		CacheReadTokens: &run.CacheReadTokens, CacheWriteTokens: &run.CacheWriteTokens}
}
