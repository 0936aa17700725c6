package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

var hashA = strings.Repeat("a", 96)

// worstName is a name that escapes as badly as JSON allows: control characters
// (6 bytes each), quotes, and 4-byte runes.
func worstName() string {
	return strings.Repeat("\x01\"😀\u2028", 500)
}

func worstTaskComplete() TaskComplete {
	return TaskComplete{
		TaskID: math.MaxInt64, GoalID: math.MaxInt64, Step: math.MaxInt,
		Agent: worstName(), Verifier: worstName(), Contract: hashA, Output: hashA,
		Override: true, Commit: strings.Repeat("f", 64), Tree: strings.Repeat("e", 64), Attestation: strings.Repeat("d", 64), Judge: &JudgeCounts{Changed: math.MaxInt, Restored: true,
			Floor: &[5]int{math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt}, HeldOut: &[2]int{math.MaxInt, math.MaxInt}},
		At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", 3600)),
	}
}

func TestTaskCompleteWorstCaseFitsOneChunk(t *testing.T) {
	e, err := worstTaskComplete().Entry()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Message) > MaxMessageBytes {
		t.Fatalf("worst case is %d bytes", len(e.Message))
	}
	t.Logf("worst-case task.complete: %d bytes", len(e.Message))
	m, err := ParseMessage(e.Message)
	if err != nil {
		t.Fatal(err)
	}
	if m.Task != math.MaxInt64 || m.Override == nil || !*m.Override || m.Contract != hashA {
		t.Fatalf("round trip: %+v", m)
	}
	if !json.Valid(e.Message) || bytes.Contains(e.Message, []byte("\n")) {
		t.Fatal("not compact JSON")
	}
	if e.Type != models.LedgerTaskComplete || *e.TaskID != math.MaxInt64 || !e.Override || e.Status != models.LedgerPending {
		t.Fatalf("entry: %+v", e)
	}
}

func TestTaskCompleteFormat(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	e, err := TaskComplete{TaskID: 42, GoalID: 7, Step: 2, Agent: "dev-1", Verifier: "runner", Contract: hashA, Output: hashA, At: at}.Entry()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"task.complete","task":42,"goal":7,"step":2,"agent":"dev-1","verifier":"runner","kind":"runner","contract":"` + hashA + `","output":"` + hashA + `","override":false,"ts":"2026-05-01T10:00:00.123456Z"}`
	if string(e.Message) != want {
		t.Fatalf("got  %s\nwant %s", e.Message, want)
	}
}

func TestTaskCompleteRejectsBadInput(t *testing.T) {
	for name, c := range map[string]TaskComplete{
		"no task":       {Contract: hashA},
		"bad contract":  {TaskID: 1, Contract: "abc"},
		"bad output":    {TaskID: 1, Contract: hashA, Output: "zz"},
		"nonhex output": {TaskID: 1, Contract: hashA, Output: strings.Repeat("z", 96)},
	} {
		if _, err := c.Entry(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLimitName(t *testing.T) {
	for _, s := range []string{"", "plain", worstName(), strings.Repeat("é", 1000), "bad\xffutf8"} {
		got := LimitName(s, MaxNameJSON)
		b, _ := json.Marshal(got)
		if len(b)-2 > MaxNameJSON+6 { // json.Marshal escapes HTML; our encoder does not
			t.Errorf("LimitName(%q) encodes to %d bytes", s[:min(len(s), 20)], len(b)-2)
		}
		if !strings.HasPrefix(strings.ToValidUTF8(s, "\uFFFD"), got) {
			t.Errorf("LimitName(%q) = %q is not a prefix", s, got)
		}
	}
	if LimitName("short", MaxNameJSON) != "short" {
		t.Fatal("short name changed")
	}
}

// blockedPayload returns valid JSON of exactly n bytes.
func blockedPayload(t *testing.T, n int) []byte {
	t.Helper()
	head := `{"type":"task.blocked","attempts":[{"stage":"verify","failure":"`
	tail := `"}]}`
	fill := n - len(head) - len(tail)
	if fill < 0 {
		t.Fatal("too small")
	}
	b := []byte(head + strings.Repeat("x", fill) + tail)
	if len(b) != n || !json.Valid(b) {
		t.Fatalf("payload of %d bytes", len(b))
	}
	return b
}

// The blocked payload is never chunked: just under and just over one chunk, and far
// over, the message is a one-chunk summary carrying the payload's hash and size.
func TestTaskBlockedBoundary(t *testing.T) {
	for _, n := range []int{MaxMessageBytes - 1, MaxMessageBytes, MaxMessageBytes + 1, 64 * 1024} {
		p := blockedPayload(t, n)
		e, err := TaskBlocked{TaskID: math.MaxInt64, GoalID: math.MaxInt64, Step: 99, Agent: worstName(), Attempts: 20, Stage: worstName(), Payload: p, At: time.Now()}.Entry()
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		if len(e.Message) > MaxMessageBytes {
			t.Fatalf("%d-byte payload: message %d bytes", n, len(e.Message))
		}
		if !bytes.Equal(e.Payload, p) {
			t.Fatalf("%d: payload not stored verbatim", n)
		}
		m, err := ParseMessage(e.Message)
		if err != nil {
			t.Fatal(err)
		}
		if m.Payload != SHA384Hex(p) || m.Size != n || m.Attempts != 20 {
			t.Fatalf("%d: message %s", n, e.Message)
		}
		if err := CheckPayload(e); err != nil {
			t.Fatal(err)
		}
		e.Payload[len(e.Payload)/2] ^= 1
		if CheckPayload(e) == nil {
			t.Fatalf("%d: altered payload not caught", n)
		}
		t.Logf("payload %6d bytes -> message %d bytes", n, len(e.Message))
	}
	if _, err := (TaskBlocked{TaskID: 1, Payload: []byte("not json")}).Entry(); err == nil {
		t.Fatal("invalid payload accepted")
	}
}

func TestGoalVerified(t *testing.T) {
	e, err := GoalVerified{GoalID: 7, Verifier: "lead", Verified: 5, Cancelled: 0, Payload: []byte(`{"notes":"ok"}`), At: time.Now()}.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(e.Message, []byte(`"verified":5,"cancelled":0`)) || e.TaskID != nil || *e.GoalID != 7 {
		t.Fatalf("%s", e.Message)
	}
	if err := CheckPayload(e); err != nil {
		t.Fatal(err)
	}
	if _, err := (GoalVerified{Payload: []byte(`{}`)}).Entry(); err == nil {
		t.Fatal("goal id 0 accepted")
	}
}

func TestParseMessageRejects(t *testing.T) {
	for _, s := range []string{`nope`, `{"v":2,"type":"task.complete"}`, `{"v":1,"type":"task.other"}`} {
		if _, err := ParseMessage([]byte(s)); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestComposer(t *testing.T) {
	var c models.LedgerComposer = Composer{}
	goal := int64(7)
	task := &models.Task{ID: 3, GoalID: &goal, StepNum: 2, Override: true}
	at := time.Now()
	e, err := c.TaskComplete(models.Completion{Task: task, Builder: &models.Agent{Name: "dev"}, Kind: models.KindOverride, OutputHash: hashA, At: at})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ParseMessage(e.Message)
	ch, _ := ContractHash(task.Contract)
	if m.Verifier != RunnerName || m.Agent != "dev" || m.Contract != ch || !*m.Override || m.Goal != 7 || m.Step != 2 || m.Kind != models.KindOverride || e.Kind != models.KindOverride {
		t.Fatalf("%s", e.Message)
	}
	e, err = c.TaskBlocked(task, models.BlockedPayload{Type: "task.blocked", TaskID: 3, Agent: "dev",
		Attempts: []models.BlockedAttempt{{Attempt: 1, Stage: "file", Failure: strings.Repeat("f", 3000)}, {Attempt: 2, Stage: "verify", Failure: "exit 1"}}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ = ParseMessage(e.Message)
	if m.Stage != "verify" || m.Attempts != 2 || len(e.Payload) < 3000 || CheckPayload(e) != nil {
		t.Fatalf("%s", e.Message)
	}
	e, err = c.GoalVerified(&models.Goal{ID: 7, Title: "t", Notes: "n"}, &models.Agent{Name: "lead"},
		map[models.TaskState]int{models.TaskVerified: 4, models.TaskCancelled: 1}, at)
	if err != nil {
		t.Fatal(err)
	}
	m, _ = ParseMessage(e.Message)
	if *m.Verified != 4 || *m.Cancelled != 1 || m.Verifier != "lead" {
		t.Fatalf("%s", e.Message)
	}
}

// BenchmarkTaskCompleteBytes reports the size of a typical and of the worst-case
// task.complete message.
func BenchmarkTaskCompleteBytes(b *testing.B) {
	typical := TaskComplete{TaskID: 1234, GoalID: 56, Step: 3, Agent: "claude-dev-1", Verifier: "runner", Contract: hashA, Output: hashA, At: time.Now()}
	var n, w int
	for b.Loop() {
		e, err := typical.Entry()
		if err != nil {
			b.Fatal(err)
		}
		n = len(e.Message)
	}
	e, _ := worstTaskComplete().Entry()
	w = len(e.Message)
	b.ReportMetric(float64(n), "bytes/msg")
	b.ReportMetric(float64(w), "worst-bytes/msg")
}
