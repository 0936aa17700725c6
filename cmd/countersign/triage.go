package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/triage"
	"github.com/countersign/countersign/runner/worker"
)

// triageFlags adds the triage's flags: a stronger model than the evaluator's, through
// the same Anthropic client, or a command; neither means tasks are blocked at once.
func triageFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.TriageModel, "triage-model", envOr("", "COUNTERSIGN_TRIAGE_MODEL"), "Anthropic model that triages a task whose attempts ran out (retry with a new approach, or escalate with a summary); needs ANTHROPIC_API_KEY; empty: no triage unless -triage-command (env COUNTERSIGN_TRIAGE_MODEL)")
	fs.StringVar(&c.TriageCommand, "triage-command", envOr("", "COUNTERSIGN_TRIAGE_COMMAND"), "command that triages instead of -triage-model: the request as JSON on stdin, a decision as JSON on stdout; split on spaces, run like the evaluator command (env COUNTERSIGN_TRIAGE_COMMAND)")
}

// newTriager builds the triage c configures, nil when it configures none.
func newTriager(c *config, log *slog.Logger, confine *worker.Confinement) (triage.Triager, error) {
	switch {
	case c.TriageModel != "" && c.TriageCommand != "":
		return nil, errors.New("flags -triage-model and -triage-command: give one")
	case c.TriageModel != "":
		key := os.Getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, errors.New("flag -triage-model: ANTHROPIC_API_KEY is not set")
		}
		base, err := evaluator.ResolveBaseURL(c.EvalBaseURL, "-evaluator-base-url")
		if err != nil {
			return nil, err
		}
		a, err := evaluator.NewAnthropic(evaluator.AnthropicConfig{APIKey: key, Model: c.TriageModel, BaseURL: base, MaxTokens: 2048})
		if err != nil {
			return nil, fmt.Errorf("flag -triage-model: %w", err)
		}
		log.Info("triage: anthropic", "model", a.Model(), "base_url", evaluator.RedactURL(base))
		return triage.Anthropic{API: a}, nil
	case c.TriageCommand != "":
		argv := strings.Fields(c.TriageCommand)
		cmd, err := evaluator.NewCommand(argv, 0)
		if err != nil {
			return nil, fmt.Errorf("flag -triage-command: %w", err)
		}
		base := confineCommand(c, "triage", cmd, confine, log)
		log.Info("triage: command", "command", argv[0], "base_url", evaluator.RedactURL(base))
		return triage.Command{Cmd: cmd}, nil
	}
	log.Info("triage: none (a task whose attempts run out is blocked at once)")
	return nil, nil
}
